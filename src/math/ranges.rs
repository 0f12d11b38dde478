//! Allowed ranges of every numeric parameter, shared by the preset parser (which reports a
//! violation with its line and column) and the command line.

use serde::{Deserialize, Deserializer, de::Error as _};

/// A closed or half-open interval of allowed values with a human name.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Range {
    /// What the value is, as shown in messages.
    pub name: &'static str,
    /// Lower bound.
    pub min: f64,
    /// Upper bound.
    pub max: f64,
    /// Whether `min` itself is excluded.
    pub min_open: bool,
}

impl Range {
    /// The same range with another lower bound (closed).
    pub const fn with_min(self, min: f64) -> Self {
        Self {
            min,
            min_open: false,
            ..self
        }
    }

    /// A closed interval [min, max] named `name` (for options checked on the spot).
    pub const fn closed_range(name: &'static str, min: f64, max: f64) -> Self {
        Self::closed(name, min, max)
    }

    const fn closed(name: &'static str, min: f64, max: f64) -> Self {
        Self {
            name,
            min,
            max,
            min_open: false,
        }
    }

    const fn positive(name: &'static str, max: f64) -> Self {
        Self {
            name,
            min: 0.0,
            max,
            min_open: true,
        }
    }

    /// `Ok(v)` inside the range, otherwise a message naming the allowed range. The engines
    /// compute in f32, so a value must also survive the conversion: a positive value that
    /// rounds to 0 (or to a subnormal) in f32 is out of range too.
    pub fn check(&self, v: f64) -> Result<f64, String> {
        let above_min = if self.min_open {
            v > self.min && (v as f32) >= f32::MIN_POSITIVE
        } else {
            v >= self.min
        };
        if v.is_finite() && above_min && v <= self.max {
            Ok(v)
        } else if self.min_open && v > self.min && v <= self.max {
            // Inside the interval as written, but not in the engines' precision: say so, as
            // "out of (0, 100]" would be false of 1e-45.
            Err(format!(
                "{} = {} is out of range in f32, the engines' precision: below {:e}, the \
                 smallest positive normal f32, it {}; allowed {} from {:e} on",
                self.name,
                short_number(v),
                f32::MIN_POSITIVE,
                if v as f32 == 0.0 {
                    "rounds to 0"
                } else {
                    "loses its precision"
                },
                self.describe(),
                f32::MIN_POSITIVE
            ))
        } else {
            Err(format!(
                "{} = {} is out of range: allowed {}",
                self.name,
                short_number(v),
                self.describe()
            ))
        }
    }

    /// The interval in mathematical notation.
    pub fn describe(&self) -> String {
        format!(
            "{}{}, {}]",
            if self.min_open { "(" } else { "[" },
            fmt_bound(self.min),
            fmt_bound(self.max)
        )
    }
}

/// A number for a message: as written when short, in scientific notation when huge or tiny
/// (an offending 1e300 must not print 300 digits).
pub fn short_number(v: f64) -> String {
    let plain = format!("{v}");
    if plain.len() <= 12 {
        plain
    } else if v.is_finite() && (1e-3..1e6).contains(&v.abs()) {
        // Seven significant digits in fixed notation (0.03162278, not 3.162278e-2).
        let decimals = (6 - v.abs().log10().floor() as i32).max(0) as usize;
        let text = format!("{v:.decimals$}");
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        let text = format!("{v:.6e}");
        let (mantissa, exponent) = text.split_once('e').unwrap_or((&text, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        format!("{mantissa}e{exponent}")
    }
}

/// A value a user wrote, as echoed in a one-line message: a long one is shown by its start
/// and length (`1234567890123456789012… (300 characters)`), and control characters (a
/// newline, a terminal's escape sequences) and the bidirectional overrides that reorder a
/// line on screen are escaped (`\u{1b}`).
pub fn short_text(text: &str) -> String {
    shown_within(text, 24)
}

/// A name a user wrote (a preset's or a column's), as echoed in a message: like
/// [`short_text`], cut only past 80 characters.
pub fn printable(text: &str) -> String {
    shown_within(text, 80)
}

/// `text` with its control characters (a newline as `\n`, ESC as `\u{1b}`) and the
/// bidirectional overrides that reorder a line on screen (`\u{202e}`) escaped, whole.
pub fn escaped(text: &str) -> String {
    text.chars()
        .flat_map(|c| {
            if c.is_control() {
                c.escape_debug().collect::<Vec<_>>()
            } else if matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
                c.escape_unicode().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
}

/// `text` with its control and reordering characters escaped, cut to `max` characters.
fn shown_within(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        escaped(text)
    } else {
        let start: String = text.chars().take(max.saturating_sub(4)).collect();
        format!("{}… ({count} characters)", escaped(&start))
    }
}

/// A number for a table column with `decimals` decimals: fixed-point in the usual range, in
/// scientific notation when huge or tiny (`{:.4}` of 1e300 would print 300 digits).
pub fn short_fixed(v: f64, decimals: usize) -> String {
    if v.is_finite() && v != 0.0 && (v.abs() >= 1e6 || v.abs() < 1e-3) {
        format!("{v:.decimals$e}")
    } else {
        format!("{v:.decimals$}")
    }
}

fn fmt_bound(v: f64) -> String {
    if v != 0.0 && (v.abs() >= 1e5 || v.abs() < 1e-3) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// Step size h.
pub const STEP_SIZE: Range = Range::positive("step size h", 10.0);
/// Mass m. With |p| at most [`DIVERGENCE_BOUND`], the heat p K'(p) ≤ p²/m then stays below
/// 1e28, so the f32 sums of the kinetic temperature stay finite while no chain diverged.
pub const MASS: Range = Range::closed("mass m", 1e-4, 1e4);
/// Friction floor D.
pub const FRICTION_FLOOR: Range = Range::closed("friction floor D", 0.0, 1e3);
/// Temperature T.
pub const TEMPERATURE: Range = Range::closed("temperature T", 0.0, 1e3);
/// Speed of light c of the hyperbolic kinetic energy (below 1e-3 the relativistic factor
/// overflows f32 and the chains freeze).
pub const SPEED: Range = Range::closed("speed limit c", 1e-3, 1e4);
/// Friction sign φ.
pub const FRICTION_SIGN: Range = Range::closed("friction sign", -1.0, 1.0);
/// SGHMC friction C, SGHMC noise estimate B̂ and SGNHT diffusion A.
pub const FRICTION: Range = Range::closed("friction", 0.0, 1e4);
/// Gradient-noise standard deviations.
pub const NOISE_SIGMA: Range = Range::closed("gradient noise σ", 0.0, 1e4);
/// State dependence κ of the gradient noise.
pub const NOISE_KAPPA: Range = Range::closed("noise state dependence κ", 0.0, 100.0);
/// Divergence bound on |p| (beyond 1e12 the heat p²/m of a chain not yet counted as
/// diverged could overflow the engines' f32 sums).
pub const DIVERGENCE_BOUND: Range = Range::positive("divergence bound", 1e12);
/// Scales of targets.
pub const SIGMA: Range = Range::positive("scale", 1e3);
/// Correlation ρ.
pub const RHO: Range = Range::closed("correlation ρ", -0.999, 0.999);
/// Banana curvature.
pub const CURVATURE: Range = Range::closed("curvature b", -10.0, 10.0);
/// Radii and spacings.
pub const RADIUS: Range = Range::positive("radius", 100.0);
/// Component variances.
pub const VARIANCE: Range = Range::positive("variance", 100.0);
/// σ_v of the funnel.
pub const FUNNEL_SIGMA: Range = Range::positive("funnel σ_v", 6.0);
/// Double-well barrier.
/// (Without a barrier the density is flat in θ₁ and cannot be normalised; below 1e-3 its
/// quartic tails reach beyond 40 μ.)
pub const BARRIER: Range = Range::closed("barrier height", 1e-3, 100.0);
/// Degrees of freedom ν of the Student-t: above 2 its variance is finite (the moments the
/// diagnostics compare with); up to 100 it is already close to a Gaussian.
pub const DEGREES_OF_FREEDOM: Range = Range::closed("degrees of freedom ν", 2.5, 100.0);
/// Data points of data-based targets: the exact logistic posterior passes over all of them at
/// about a million grid points before a run starts, so 1,000 keeps that set-up under half a
/// minute on two cores (27 CPU-seconds measured; 100,000 took hours).
pub const DATA_POINTS: Range = Range::closed("data points", 2.0, 1000.0);
/// Points of a generated classification data set.
pub const DATASET_POINTS: Range = Range::closed("data-set points", 8.0, 20_000.0);
/// Standard deviation of the jitter added to generated data points.
pub const DATA_NOISE: Range = Range::closed("data noise", 0.0, 2.0);
/// Fraction of a data set held out for testing.
pub const TEST_FRACTION: Range = Range::closed("test fraction", 0.0, 0.9);
/// Classes of a generated data set.
pub const CLASSES: Range = Range::closed("classes", 2.0, 8.0);
/// Minibatch size.
pub const BATCH: Range = Range::closed("batch size", 0.0, 1e5);
/// Number of chains.
pub const CHAINS: Range = Range::closed("chains", 1.0, 16_777_216.0);
/// Number of steps.
pub const STEPS: Range = Range::closed("steps", 1.0, 4e9);
/// Cycles of the cyclical schedule.
pub const CYCLES: Range = Range::closed("cycles", 1.0, 1e6);
/// Fraction of a cycle spent exploring (1 would leave no sampling stage).
pub const FRACTION: Range = Range::closed("exploration fraction", 0.0, 0.99);
/// Initial spread of θ and ξ.
pub const INIT_SCALE: Range = Range::closed("initial scale", 0.0, 1e3);
/// Steps between recorded statistics.
pub const RECORD_EVERY: Range = Range::closed("record every", 1.0, 1e6);

/// A location in the plane: a target's mean, the centre of the initial state.
pub const LOCATION: Range = Range::closed("location", -1e4, 1e4);
/// The initial thermostat ξ.
pub const INIT_XI: Range = Range::closed("initial ξ", -1e4, 1e4);
/// The weights that generate a logistic data set (the sigmoid saturates far beyond ±100).
pub const TRUE_WEIGHT: Range = Range::closed("true weight", -100.0, 100.0);

/// Coordinate shown in the phase portraits.
pub const COORDINATE: Range = Range::closed("coordinate", 0.0, 1.0);
/// Highlighted chains with trails.
pub const HIGHLIGHTED: Range = Range::closed("highlighted chains", 0.0, 5000.0);
/// Steps per frame of the app.
pub const STEPS_PER_FRAME: Range = Range::closed("steps per frame", 1.0, 1e5);
/// Slow motion: steps per second (0: off).
pub const STEPS_PER_SECOND: Range = Range::closed("steps per second", 0.0, 1e6);
/// Networks of an MLP posterior run (each holds θ, p and ξ for every weight).
pub const MLP_CHAINS: Range = Range::closed("networks", 1.0, 65_536.0);
/// Side of the posterior-predictive map in cells.
pub const MAP_RESOLUTION: Range = Range::closed("map resolution", 8.0, 256.0);
/// Networks averaged into the app's posterior-predictive map.
pub const PREDICTIVE_CHAINS: Range = Range::closed("predictive networks", 1.0, 65_536.0);

/// Learning rate of projected SGD on the sphere (a step of 10 crosses the sphere many times).
pub const SPHERE_STEP_SIZE: Range = Range::positive("learning rate η", 10.0);
/// HMC's leapfrog steps L per proposal: one is the Metropolis-adjusted Langevin algorithm,
/// a few hundred a long trajectory; the GPU runs a whole proposal in one invocation.
pub const LEAPFROG_STEPS: Range = Range::closed("leapfrog steps L", 1.0, 200.0);
/// HMC's target acceptance rate for step-size adaptation (0.8 is the usual aim).
pub const TARGET_ACCEPTANCE: Range = Range::closed("target acceptance", 0.05, 0.99);
/// How many training points a network's likelihood uses (at most the data set's own count,
/// checked when it is built).
pub const DATA_USED: Range = Range::closed("data used n", 1.0, 100_000.0);
/// Heavy-ball momentum μ.
pub const MOMENTUM: Range = Range {
    name: "momentum μ",
    min: 0.0,
    max: 0.999,
    min_open: false,
};
/// Objects per minibatch on the sphere (drawn with replacement).
pub const SPHERE_BATCH: Range = Range::closed("sphere batch size", 1.0, 64.0);
/// Learning rates of a thermodynamics sweep (the bounds of its log grid).
pub const THERMO_LR: Range = Range::positive("learning rate", 100.0);
/// Points of a thermodynamics sweep.
pub const THERMO_POINTS: Range = Range::closed("points", 2.0, 1000.0);

macro_rules! ranged {
    ($(#[$doc:meta] $fn_name:ident: $ty:ty => $range:expr;)*) => {$(
        #[$doc]
        pub fn $fn_name<'de, D: Deserializer<'de>>(d: D) -> Result<$ty, D::Error> {
            let v = <$ty>::deserialize(d)?;
            $range.check(v as f64).map_err(D::Error::custom)?;
            Ok(v)
        }
    )*};
}

/// Deserialises how many training points a network's likelihood uses (absent: all).
pub fn de_data_used<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    let v = Option::<u32>::deserialize(d)?;
    if let Some(v) = v {
        DATA_USED.check(f64::from(v)).map_err(D::Error::custom)?;
    }
    Ok(v)
}

/// Deserialises HMC's optional target acceptance rate (absent: no adaptation).
pub fn de_target_acceptance<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    let v = Option::<f64>::deserialize(d)?;
    if let Some(v) = v {
        TARGET_ACCEPTANCE.check(v).map_err(D::Error::custom)?;
    }
    Ok(v)
}

ranged! {
    /// Deserialises a step size.
    de_step_size: f64 => STEP_SIZE;
    /// Deserialises a number of networks.
    de_mlp_chains: u32 => MLP_CHAINS;
    /// Deserialises a map resolution.
    de_map_resolution: u32 => MAP_RESOLUTION;
    /// Deserialises a number of predictive networks.
    de_predictive_chains: u32 => PREDICTIVE_CHAINS;
    /// Deserialises a mass.
    de_mass: f64 => MASS;
    /// Deserialises a friction floor.
    de_friction_floor: f64 => FRICTION_FLOOR;
    /// Deserialises a temperature.
    de_temperature: f64 => TEMPERATURE;
    /// Deserialises a speed limit.
    de_speed: f64 => SPEED;
    /// Deserialises a friction sign.
    de_friction_sign: f64 => FRICTION_SIGN;
    /// Deserialises a friction or diffusion constant.
    de_friction: f64 => FRICTION;
    /// Deserialises a noise σ.
    de_noise_sigma: f64 => NOISE_SIGMA;
    /// Deserialises κ.
    de_noise_kappa: f64 => NOISE_KAPPA;
    /// Deserialises the divergence bound.
    de_divergence_bound: f64 => DIVERGENCE_BOUND;
    /// Deserialises a target scale.
    de_sigma: f64 => SIGMA;
    /// Deserialises a correlation.
    de_rho: f64 => RHO;
    /// Deserialises a curvature.
    de_curvature: f64 => CURVATURE;
    /// Deserialises a radius or spacing.
    de_radius: f64 => RADIUS;
    /// Deserialises a variance.
    de_variance: f64 => VARIANCE;
    /// Deserialises the funnel's σ_v.
    de_funnel_sigma: f64 => FUNNEL_SIGMA;
    /// Deserialises a barrier height.
    de_barrier: f64 => BARRIER;
    /// Deserialises the Student-t's degrees of freedom.
    de_degrees_of_freedom: f64 => DEGREES_OF_FREEDOM;
    /// Deserialises a data-set size.
    de_data_points: u32 => DATA_POINTS;
    /// Deserialises the size of a generated classification data set.
    de_dataset_points: u32 => DATASET_POINTS;
    /// Deserialises the jitter of generated data points.
    de_data_noise: f32 => DATA_NOISE;
    /// Deserialises a test fraction.
    de_test_fraction: f32 => TEST_FRACTION;
    /// Deserialises a number of classes.
    de_classes: u32 => CLASSES;
    /// Deserialises a batch size.
    de_batch: u32 => BATCH;
    /// Deserialises a number of chains.
    de_chains: u32 => CHAINS;
    /// Deserialises a number of steps.
    de_steps: u32 => STEPS;
    /// Deserialises a number of cycles.
    de_cycles: u32 => CYCLES;
    /// Deserialises a fraction.
    de_fraction: f64 => FRACTION;
    /// Deserialises an initial scale.
    de_init_scale: f64 => INIT_SCALE;
    /// Deserialises a recording interval.
    de_record_every: u32 => RECORD_EVERY;
    /// Deserialises a coordinate index.
    de_coordinate: u32 => COORDINATE;
    /// Deserialises a number of highlighted chains.
    de_highlighted: u32 => HIGHLIGHTED;
    /// Deserialises steps per frame.
    de_steps_per_frame: u32 => STEPS_PER_FRAME;
    /// Slow motion's steps per second.
    de_steps_per_second: f64 => STEPS_PER_SECOND;
    /// Deserialises an initial ξ.
    de_init_xi: f64 => INIT_XI;
    /// Deserialises the sphere's learning rate.
    de_sphere_h: f64 => SPHERE_STEP_SIZE;
    /// Deserialises a heavy-ball momentum.
    de_momentum: f64 => MOMENTUM;
    /// Deserialises HMC's leapfrog steps.
    de_leapfrog_steps: u32 => LEAPFROG_STEPS;
    /// Deserialises the sphere's batch size.
    de_sphere_batch: u32 => SPHERE_BATCH;
}

/// Deserialises a pair of coordinates, each in `range`.
fn de_pair<'de, D: Deserializer<'de>>(d: D, range: Range) -> Result<[f64; 2], D::Error> {
    let v = <[f64; 2]>::deserialize(d)?;
    for x in v {
        range.check(x).map_err(D::Error::custom)?;
    }
    Ok(v)
}

/// Deserialises a location in the plane (a mean, a centre).
pub fn de_location<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    de_pair(d, LOCATION)
}

/// Deserialises the weights of a logistic data set.
pub fn de_true_weights<'de, D: Deserializer<'de>>(d: D) -> Result<[f64; 2], D::Error> {
    de_pair(d, TRUE_WEIGHT)
}

/// Deserialises a map from names in which every name appears once (a formula's parameters, a
/// sweep's fixed fields): read as a plain map, `{"s": 1.0, "s": 2.0}` would keep the last value
/// silently and hide a typing mistake. The refusal names the key.
pub fn de_unique_map<'de, D, V>(d: D) -> Result<std::collections::BTreeMap<String, V>, D::Error>
where
    D: Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Unique<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Unique<V> {
        type Value = std::collections::BTreeMap<String, V>;

        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a map from names to values, each name once")
        }

        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut out = std::collections::BTreeMap::new();
            while let Some((key, value)) = map.next_entry::<String, V>()? {
                if out.contains_key(&key) {
                    return Err(A::Error::custom(format!(
                        "\"{}\" is given twice: write each name once",
                        short_text(&key)
                    )));
                }
                out.insert(key, value);
            }
            Ok(out)
        }
    }
    d.deserialize_map(Unique(std::marker::PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_accept_inside_and_name_the_interval_outside() {
        assert_eq!(STEP_SIZE.check(0.05), Ok(0.05));
        let e = STEP_SIZE.check(0.0).unwrap_err();
        assert_eq!(e, "step size h = 0 is out of range: allowed (0, 10]");
        assert!(FRICTION_SIGN.check(-1.0).is_ok());
        assert!(FRICTION_SIGN.check(1.5).is_err());
        assert!(MASS.check(f64::NAN).is_err());
        assert!(CHAINS.describe().contains("1.6777216e7"));
        // A step size that is 0 in f32 is refused, and huge values print short.
        let e = STEP_SIZE.check(1e-50).unwrap_err();
        assert_eq!(
            e,
            "step size h = 1e-50 is out of range in f32, the engines' precision: below \
             1.1754944e-38, the smallest positive normal f32, it rounds to 0; allowed (0, 10] \
             from 1.1754944e-38 on"
        );
        assert!(
            RADIUS
                .check(1e-40)
                .unwrap_err()
                .contains("loses its precision")
        );
        let e = MASS.check(1e300).unwrap_err();
        assert!(e.contains("1e300") && e.len() < 80, "{e}");
        assert_eq!(short_number(0.05), "0.05");
        assert_eq!(short_number(1e300), "1e300");
        assert_eq!(short_number(-1.2345678e-30), "-1.234568e-30");
        assert_eq!(short_number(f64::NAN), "NaN");
        assert_eq!(short_number(0.001f64.sqrt()), "0.03162278");
        assert_eq!(short_number(123456.78912345), "123456.8");
    }

    #[test]
    fn echoed_text_is_one_short_line_without_escape_sequences() {
        assert_eq!(short_text("gaussian"), "gaussian");
        assert_eq!(short_text("a\nb\u{1b}[2J"), "a\\nb\\u{1b}[2J");
        assert_eq!(printable("x\u{202e}y"), "x\\u{202e}y");
        let long = "7".repeat(300);
        assert_eq!(
            short_text(&long),
            format!("{}… (300 characters)", &long[..20])
        );
        assert_eq!(
            printable(&long),
            format!("{}… (300 characters)", &long[..76])
        );
    }

    #[test]
    fn a_name_given_twice_in_a_map_is_refused_by_name() {
        #[derive(Debug, serde::Deserialize)]
        struct Holder {
            #[serde(deserialize_with = "de_unique_map")]
            parameters: std::collections::BTreeMap<String, f64>,
        }
        let ok: Holder = ron::from_str(r#"(parameters: {"a": 1.0, "b": 2.0})"#).unwrap();
        assert_eq!(ok.parameters.len(), 2);
        let e = ron::from_str::<Holder>(r#"(parameters: {"a": 1.0, "a": 2.0})"#).unwrap_err();
        assert!(e.to_string().contains("\"a\" is given twice"), "{e}");
        let e = serde_json::from_str::<Holder>(r#"{"parameters": {"a": 1, "a": 2}}"#).unwrap_err();
        assert!(e.to_string().contains("\"a\" is given twice"), "{e}");
    }
}
