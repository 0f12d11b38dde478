//! The formula language, parsed by recursive descent straight into the SSA [`Builder`] (no
//! syntax tree: a long sum is a loop, not a deep tree). Every error names the character it
//! is at; nesting is bounded so that no input can overflow the stack.
//!
//! ```text
//! formula := sum
//! sum     := product (("+" | "-") product)*
//! product := unary (("*" | "/") unary)*
//! unary   := ("-" | "+") unary | power
//! power   := atom (("^" | "**") unary)?          right-associative: 2^3^2 = 2^9
//! atom    := number | variable | parameter | "pi" | function "(" sum ("," sum)* ")" | "(" sum ")"
//! ```

use super::program::{Builder, Op};
use super::{ExprError, MAX_FORMULA_BYTES, MAX_NESTING};

/// The functions of the language with their arity (`None`: one or more arguments, two or
/// more for min and max).
pub const FUNCTIONS: &[(&str, Option<usize>)] = &[
    ("exp", Some(1)),
    ("log", Some(1)),
    ("ln", Some(1)),
    ("log1p", Some(1)),
    ("sqrt", Some(1)),
    ("sin", Some(1)),
    ("cos", Some(1)),
    ("tanh", Some(1)),
    ("sinh", Some(1)),
    ("cosh", Some(1)),
    ("abs", Some(1)),
    ("min", None),
    ("max", None),
    ("logsumexp", None),
];

/// Spellings of θ₁ and θ₂.
pub const THETA1: &[&str] = &["θ1", "θ₁", "t1", "theta1", "x"];
/// See [`THETA1`].
pub const THETA2: &[&str] = &["θ2", "θ₂", "t2", "theta2", "y"];
/// Named constants.
pub const CONSTANTS: &[(&str, f64)] = &[("pi", std::f64::consts::PI), ("π", std::f64::consts::PI)];

/// Whether `name` is taken by the language (a function, a variable, a constant).
pub fn is_reserved(name: &str) -> bool {
    FUNCTIONS.iter().any(|(f, _)| *f == name)
        || THETA1.contains(&name)
        || THETA2.contains(&name)
        || CONSTANTS.iter().any(|(c, _)| *c == name)
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String),
    Sym(char),
    End,
}

struct Lexer<'a> {
    text: &'a str,
    at: usize,
}

fn is_ident_start(c: char) -> bool {
    c.is_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || ('₀'..='₉').contains(&c)
}

impl<'a> Lexer<'a> {
    fn error(&self, at: usize, message: String) -> ExprError {
        ExprError::at(self.text, at, message)
    }

    /// The next token and the byte offset it starts at.
    fn next(&mut self) -> Result<(Tok, usize), ExprError> {
        let rest = &self.text[self.at..];
        let trimmed = rest.trim_start();
        self.at += rest.len() - trimmed.len();
        let start = self.at;
        let Some(c) = trimmed.chars().next() else {
            return Ok((Tok::End, start));
        };
        if c.is_ascii_digit() || c == '.' {
            let bytes = trimmed.as_bytes();
            let mut end = 0;
            while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
                end += 1;
            }
            if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
                let mut k = end + 1;
                if k < bytes.len() && (bytes[k] == b'+' || bytes[k] == b'-') {
                    k += 1;
                }
                if k < bytes.len() && bytes[k].is_ascii_digit() {
                    while k < bytes.len() && bytes[k].is_ascii_digit() {
                        k += 1;
                    }
                    end = k;
                }
            }
            let literal = &trimmed[..end];
            let v: f64 = literal
                .parse()
                .map_err(|_| self.error(start, format!("'{literal}' is not a number")))?;
            if !v.is_finite() {
                return Err(self.error(start, format!("the number {literal} is too large")));
            }
            self.at += end;
            return Ok((Tok::Num(v), start));
        }
        if is_ident_start(c) {
            let end = trimmed
                .char_indices()
                .find(|&(_, ch)| !is_ident_char(ch))
                .map_or(trimmed.len(), |(i, _)| i);
            self.at += end;
            return Ok((Tok::Ident(trimmed[..end].to_owned()), start));
        }
        self.at += c.len_utf8();
        let sym = match c {
            '+' | '-' | '/' | '^' | '(' | ')' | ',' => c,
            '−' => '-',
            '×' | '·' | '⋅' => '*',
            '*' => {
                if trimmed[1..].starts_with('*') {
                    self.at += 1;
                    '^'
                } else {
                    '*'
                }
            }
            _ => {
                return Err(self.error(start, format!("unexpected character '{c}'")));
            }
        };
        Ok((Tok::Sym(sym), start))
    }
}

/// The parser: one token of lookahead, emitting nodes into the builder.
pub struct Parser<'a, 'b> {
    lexer: Lexer<'a>,
    tok: Tok,
    tok_at: usize,
    depth: usize,
    params: &'b [String],
    /// The graph being built.
    pub builder: Builder,
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Num(v) => format!("the number {v}"),
        Tok::Ident(s) => format!("'{s}'"),
        Tok::Sym(c) => format!("'{c}'"),
        Tok::End => "the end of the formula".into(),
    }
}

impl<'a, 'b> Parser<'a, 'b> {
    /// Parses `text` with the parameters `params` into a builder; returns the root node.
    pub fn parse(text: &'a str, params: &'b [String]) -> Result<(Builder, u32), ExprError> {
        if text.len() > MAX_FORMULA_BYTES {
            return Err(ExprError::at(
                text,
                MAX_FORMULA_BYTES,
                format!(
                    "the formula is {} bytes long: at most {MAX_FORMULA_BYTES}",
                    text.len()
                ),
            ));
        }
        let mut p = Parser {
            lexer: Lexer { text, at: 0 },
            tok: Tok::End,
            tok_at: 0,
            depth: 0,
            params,
            builder: Builder::default(),
        };
        p.advance()?;
        if p.tok == Tok::End {
            return Err(p.error("the formula is empty: write an energy U(θ₁, θ₂)".into()));
        }
        let root = p.sum()?;
        if p.tok != Tok::End {
            let msg = match &p.tok {
                Tok::Sym(')') => "a ')' without its '('".to_owned(),
                t => format!("expected an operator, found {}", describe(t)),
            };
            return Err(p.error(msg));
        }
        Ok((p.builder, root))
    }

    fn error(&self, message: String) -> ExprError {
        ExprError::at(self.lexer.text, self.tok_at, message)
    }

    fn advance(&mut self) -> Result<(), ExprError> {
        let (t, at) = self.lexer.next()?;
        self.tok = t;
        self.tok_at = at;
        Ok(())
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.error(format!(
                "the formula nests deeper than {MAX_NESTING} levels"
            )));
        }
        Ok(())
    }

    fn sum(&mut self) -> Result<u32, ExprError> {
        let mut acc = self.product()?;
        while let Tok::Sym(c @ ('+' | '-')) = self.tok {
            self.advance()?;
            let rhs = self.product()?;
            acc = if c == '+' {
                self.builder.add(acc, rhs)
            } else {
                self.builder.sub(acc, rhs)
            };
        }
        Ok(acc)
    }

    fn product(&mut self) -> Result<u32, ExprError> {
        let mut acc = self.unary()?;
        while let Tok::Sym(c @ ('*' | '/')) = self.tok {
            self.advance()?;
            let rhs = self.unary()?;
            acc = if c == '*' {
                self.builder.mul(acc, rhs)
            } else {
                self.builder.div(acc, rhs)
            };
        }
        Ok(acc)
    }

    fn unary(&mut self) -> Result<u32, ExprError> {
        if let Tok::Sym(c @ ('+' | '-')) = self.tok {
            self.enter()?;
            self.advance()?;
            let v = self.unary()?;
            self.depth -= 1;
            return Ok(if c == '-' { self.builder.neg(v) } else { v });
        }
        self.power()
    }

    fn power(&mut self) -> Result<u32, ExprError> {
        let base = self.atom()?;
        if self.tok == Tok::Sym('^') {
            self.enter()?;
            self.advance()?;
            let e = self.unary()?;
            self.depth -= 1;
            return Ok(self.builder.pow(base, e));
        }
        Ok(base)
    }

    fn atom(&mut self) -> Result<u32, ExprError> {
        let at = self.tok_at;
        match self.tok.clone() {
            Tok::Num(v) => {
                self.advance()?;
                Ok(self.builder.constant(v))
            }
            Tok::Sym('(') => {
                self.enter()?;
                self.advance()?;
                let v = self.sum()?;
                if self.tok != Tok::Sym(')') {
                    return Err(self.error(format!(
                        "expected ')' to close the '(' at character {}, found {}",
                        ExprError::char_index(self.lexer.text, at) + 1,
                        describe(&self.tok)
                    )));
                }
                self.depth -= 1;
                self.advance()?;
                Ok(v)
            }
            Tok::Ident(name) => {
                self.advance()?;
                self.identifier(&name, at)
            }
            t => Err(self.error(format!(
                "expected a number, a variable or '(', found {}",
                describe(&t)
            ))),
        }
    }

    fn identifier(&mut self, name: &str, at: usize) -> Result<u32, ExprError> {
        let text = self.lexer.text;
        if THETA1.contains(&name) {
            return Ok(self.builder.theta(0));
        }
        if THETA2.contains(&name) {
            return Ok(self.builder.theta(1));
        }
        if let Some((_, v)) = CONSTANTS.iter().find(|(c, _)| *c == name) {
            return Ok(self.builder.constant(*v));
        }
        if let Some(k) = self.params.iter().position(|p| p == name) {
            return Ok(self.builder.param(k));
        }
        let Some(&(_, arity)) = FUNCTIONS.iter().find(|(f, _)| *f == name) else {
            let params = if self.params.is_empty() {
                "no parameters are defined".to_owned()
            } else {
                format!("parameters: {}", self.params.join(", "))
            };
            let mut error = ExprError::at(
                text,
                at,
                format!(
                    "unknown symbol '{name}': use θ₁/θ₂ (also x/y, t1/t2), a parameter ({params}), \
                     pi, or a function ({})",
                    FUNCTIONS
                        .iter()
                        .map(|(f, _)| *f)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
            error.unknown_symbol = Some(name.to_owned());
            return Err(error);
        };
        if self.tok != Tok::Sym('(') {
            return Err(ExprError::at(
                text,
                at,
                format!("{name} is a function: write {name}(…)"),
            ));
        }
        self.enter()?;
        self.advance()?;
        let mut args = vec![self.sum()?];
        while self.tok == Tok::Sym(',') {
            self.advance()?;
            args.push(self.sum()?);
        }
        if self.tok != Tok::Sym(')') {
            return Err(self.error(format!(
                "expected ',' or ')' in the arguments of {name}, found {}",
                describe(&self.tok)
            )));
        }
        self.depth -= 1;
        self.advance()?;
        let count_error = |want: &str| {
            ExprError::at(text, at, format!("{name} takes {want}, not {}", args.len()))
        };
        match arity {
            Some(n) if args.len() != n => return Err(count_error("one argument")),
            None if name != "logsumexp" && args.len() < 2 => {
                return Err(count_error("two or more arguments"));
            }
            _ => {}
        }
        let b = &mut self.builder;
        let a = args[0];
        Ok(match name {
            "exp" => b.unary(Op::Exp, a),
            "log" | "ln" => b.unary(Op::Ln, a),
            "log1p" => b.unary(Op::Ln1p, a),
            "sqrt" => b.unary(Op::Sqrt, a),
            "sin" => b.unary(Op::Sin, a),
            "cos" => b.unary(Op::Cos, a),
            "tanh" => b.unary(Op::Tanh, a),
            "sinh" => b.sinh(a),
            "cosh" => b.cosh(a),
            "abs" => b.unary(Op::Abs, a),
            "min" => b.fold(Op::Min, &args),
            "max" => b.fold(Op::Max, &args),
            _ => b.logsumexp(&args),
        })
    }
}
