//! The host–shader interface (`src/engine/shader_interface.rs`): the WGSL the engines compile
//! agrees with the Rust structs, codes, bindings and override constants, checked with naga
//! (wgpu's WGSL front end) without a GPU; the checker itself catches a change made on one side
//! only; and no shader declares a generated name by hand.

use atmc_lab::engine::gpu::SHADER_SOURCE;
use atmc_lab::engine::mlp::gpu::MLP_SHADER_SOURCE;
use atmc_lab::engine::shader_interface::{
    self, CHAIN_WORKGROUP, Chain2Binding, ChainPartial, GENERATED_PREFIXES, GpuChain2Params,
    GpuMlpParams, GpuSamplerParams, GpuSphereParams, MLP_WORKGROUP, MlpBinding, MlpPartial,
    MlpRegion, Program, ProgramBindings, SHARED_STRUCTS, SphereBinding, check_wgsl, constants,
    generated_wgsl,
};
use atmc_lab::engine::sphere::gpu::SPHERE_SHADER_SOURCE;
use atmc_lab::math::SamplerKind;
use atmc_lab::math::mlp::Activation;
use atmc_lab::math::rng::Stream;
use atmc_lab::math::targets::TargetKind;
use std::collections::HashMap;
use wgpu::naga;

fn parse(source: &str) -> naga::Module {
    naga::front::wgsl::parse_str(source).unwrap_or_else(|e| panic!("{}", e.emit_to_string(source)))
}

/// Every composed shader: name, source, program, the workgroup size of every entry point.
fn engines() -> [(&'static str, &'static str, Program, u32); 3] {
    [
        (
            "2-D engine",
            SHADER_SOURCE.as_str(),
            Program::Chain2,
            CHAIN_WORKGROUP,
        ),
        (
            "MLP engine",
            MLP_SHADER_SOURCE.as_str(),
            Program::Mlp,
            MLP_WORKGROUP,
        ),
        (
            "sphere engine",
            SPHERE_SHADER_SOURCE.as_str(),
            Program::Sphere,
            CHAIN_WORKGROUP,
        ),
    ]
}

/// The bindings of a program straight from its Rust enum: (number, WGSL name, uniform or
/// storage, read-only).
fn rust_bindings<B: ProgramBindings>() -> Vec<(u32, &'static str, bool, bool)> {
    B::ALL
        .iter()
        .map(|&b| {
            let decl = b.decl();
            let (uniform, read_only) = match decl.space {
                shader_interface::BindingSpace::Uniform { .. } => (true, true),
                shader_interface::BindingSpace::Storage { read_only } => (false, read_only),
            };
            (b.index(), decl.name, uniform, read_only)
        })
        .collect()
}

/// "DoubleWell" → "DOUBLE_WELL": the WGSL spelling of a Rust variant name.
fn screaming_snake(name: &str) -> String {
    let mut out = String::new();
    for (i, ch) in name.chars().enumerate() {
        if ch.is_uppercase() && i > 0 {
            out.push('_');
        }
        out.extend(ch.to_uppercase());
    }
    out
}

#[test]
fn composed_shaders_agree_with_rust() {
    for (engine, source, program, _) in engines() {
        assert_eq!(
            check_wgsl(source, program),
            Vec::<String>::new(),
            "{engine}"
        );
    }
}

/// Each program sees its own parameter blocks and no other program's.
#[test]
fn programs_see_only_their_blocks() {
    let blocks = [
        ("SamplerParams", [true, true, false]),
        ("Chain2Params", [true, false, false]),
        ("MlpParams", [false, true, false]),
        ("SphereParams", [false, false, true]),
    ];
    for (i, (engine, source, _, _)) in engines().into_iter().enumerate() {
        let module = parse(source);
        for (block, seen) in blocks {
            let declared = module
                .types
                .iter()
                .any(|(_, t)| t.name.as_deref() == Some(block));
            assert_eq!(declared, seen[i], "{engine}: struct {block}");
        }
    }
}

/// Every struct a program shares with the host, member by member, straight from naga's
/// module: name, offset, size and scalar kind against the Rust struct, and the struct's size.
#[test]
fn struct_members_have_rusts_layout() {
    for (engine, source, program, _) in engines() {
        let module = parse(source);
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        for shared in program.structs() {
            check_struct_members(engine, &module, &layouter, shared);
        }
    }
}

fn check_struct_members(
    engine: &str,
    module: &naga::Module,
    layouter: &naga::proc::Layouter,
    shared: &shader_interface::SharedStruct,
) {
    {
        let name = shared.wgsl_name;
        let (members, span) = module
            .types
            .iter()
            .find_map(|(_, t)| match &t.inner {
                naga::TypeInner::Struct { members, span } if t.name.as_deref() == Some(name) => {
                    Some((members.clone(), *span))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{engine}: no struct {name}"));
        assert_eq!(span as usize, shared.size, "{engine}: size of {name}");
        let fields = shared.fields;
        let names: Vec<_> = members.iter().map(|m| m.name.clone().unwrap()).collect();
        let rust_names: Vec<_> = fields.iter().map(|f| f.name.to_string()).collect();
        assert_eq!(names, rust_names, "{engine}: members of {name}");
        for (m, f) in members.iter().zip(fields) {
            assert_eq!(
                m.offset as usize, f.offset,
                "{engine}: offset of {}",
                f.name
            );
            assert_eq!(
                layouter[m.ty].size as usize, f.size,
                "{engine}: size of {}",
                f.name
            );
            // The scalar at the bottom of the member's type (through vectors and arrays).
            let mut ty = m.ty;
            let scalar = loop {
                match &module.types[ty].inner {
                    naga::TypeInner::Scalar(s) | naga::TypeInner::Vector { scalar: s, .. } => {
                        break *s;
                    }
                    naga::TypeInner::Array { base, .. } => ty = *base,
                    other => panic!("{engine}: {} has type {other:?}", f.name),
                }
            };
            let rust_scalar = if (f.wgsl_type)().contains("f32") {
                naga::Scalar::F32
            } else {
                naga::Scalar::U32
            };
            assert_eq!(scalar, rust_scalar, "{engine}: scalar of {}", f.name);
        }
    }
}

/// A few members by name, against the compiler's own offsets, in every program that
/// declares the block.
#[test]
fn block_offsets_are_the_compilers() {
    let modules: Vec<(&str, naga::Module)> = engines()
        .into_iter()
        .map(|(engine, source, _, _)| (engine, parse(source)))
        .collect();
    for (block, member, expected) in [
        (
            "SamplerParams",
            "seed_lo",
            core::mem::offset_of!(GpuSamplerParams, seed_lo),
        ),
        (
            "SamplerParams",
            "explore_fraction",
            core::mem::offset_of!(GpuSamplerParams, explore_fraction),
        ),
        (
            "Chain2Params",
            "target_params",
            core::mem::offset_of!(GpuChain2Params, target_params),
        ),
        (
            "Chain2Params",
            "hist_u",
            core::mem::offset_of!(GpuChain2Params, hist_u),
        ),
        (
            "MlpParams",
            "sizes",
            core::mem::offset_of!(GpuMlpParams, sizes),
        ),
        (
            "MlpParams",
            "focus_chain",
            core::mem::offset_of!(GpuMlpParams, focus_chain),
        ),
        (
            "SphereParams",
            "momentum",
            core::mem::offset_of!(GpuSphereParams, momentum),
        ),
    ] {
        let mut seen = 0;
        for (engine, module) in &modules {
            let members = module.types.iter().find_map(|(_, t)| match &t.inner {
                naga::TypeInner::Struct { members, .. } if t.name.as_deref() == Some(block) => {
                    Some(members)
                }
                _ => None,
            });
            if let Some(members) = members {
                let m = members
                    .iter()
                    .find(|m| m.name.as_deref() == Some(member))
                    .unwrap_or_else(|| panic!("{engine}: no {block}.{member}"));
                assert_eq!(m.offset as usize, expected, "{engine}: {block}.{member}");
                seen += 1;
            }
        }
        assert!(seen > 0, "no program declares {block}");
    }
}

/// Every program's bound variables, read from naga's module, are the Rust enum's bindings:
/// the same numbers, names, address spaces and access, and no other; its override constants
/// are the ones the host sets by the Rust constants.
#[test]
fn bindings_and_overrides_are_the_tables() {
    for (engine, source, program, _) in engines() {
        let module = parse(source);
        let mut found: Vec<(u32, &str, bool, bool)> = module
            .global_variables
            .iter()
            .filter_map(|(_, v)| {
                let binding = v.binding.as_ref()?;
                assert_eq!(binding.group, 0, "{engine}: {:?}", v.name);
                let (uniform, read_only) = match v.space {
                    naga::AddressSpace::Uniform => (true, true),
                    naga::AddressSpace::Storage { access } => {
                        (false, !access.contains(naga::StorageAccess::STORE))
                    }
                    other => panic!("{engine}: {:?} in {other:?}", v.name),
                };
                Some((binding.binding, v.name.as_deref()?, uniform, read_only))
            })
            .collect();
        found.sort_unstable();
        let expected = match program {
            Program::Chain2 => rust_bindings::<Chain2Binding>(),
            Program::Mlp => rust_bindings::<MlpBinding>(),
            Program::Sphere => rust_bindings::<SphereBinding>(),
        };
        assert_eq!(found, expected, "{engine}: bindings");

        let mut overrides: Vec<&str> = module
            .overrides
            .iter()
            .filter_map(|(_, o)| o.name.as_deref())
            .collect();
        overrides.sort_unstable();
        use shader_interface::{
            MAY_BE_CYCLICAL, MAY_BE_HYPERBOLIC, MAY_HAVE_GRADIENT_NOISE, MAY_OVERWRITE_XI,
            SPECIALISED_ACTIVATION, SPECIALISED_SAMPLER, SPECIALISED_TARGET,
        };
        let features = [MAY_BE_CYCLICAL, MAY_BE_HYPERBOLIC, MAY_OVERWRITE_XI];
        let mut expected: Vec<&str> = match program {
            Program::Chain2 => [
                SPECIALISED_SAMPLER,
                SPECIALISED_TARGET,
                MAY_HAVE_GRADIENT_NOISE,
            ]
            .into_iter()
            .chain(features)
            .collect(),
            Program::Mlp => [SPECIALISED_SAMPLER, SPECIALISED_ACTIVATION]
                .into_iter()
                .chain(features)
                .collect(),
            Program::Sphere => Vec::new(),
        };
        expected.sort_unstable();
        assert_eq!(overrides, expected, "{engine}: overrides");
    }
}

/// Every generated constant has the value of its Rust source, found here independently of
/// the generator's own tables; every entry point runs the workgroup size the host dispatches
/// for; and naga's validator accepts both shaders (uniform layout rules included).
#[test]
fn constants_workgroups_and_validation() {
    let mut expected: HashMap<String, u32> = HashMap::new();
    for (kind, name) in SamplerKind::ALL {
        expected.insert(format!("SAMPLER_{}", name.to_uppercase()), kind.gpu_code());
    }
    for kind in TargetKind::ALL {
        let name = screaming_snake(&format!("{kind:?}"));
        expected.insert(format!("TARGET_{name}"), kind.gpu_code());
    }
    for stream in Stream::ALL {
        let name = screaming_snake(&format!("{stream:?}"));
        expected.insert(format!("STREAM_{name}"), stream as u32);
    }
    for a in Activation::ALL {
        let name = screaming_snake(&format!("{a:?}"));
        expected.insert(format!("ACT_{name}"), a.gpu_code());
    }
    for r in MlpRegion::ALL {
        let name = screaming_snake(&format!("{r:?}"));
        expected.insert(format!("REGION_{name}"), r.gpu_code());
    }
    for slot in ChainPartial::ALL {
        let name = screaming_snake(&format!("{slot:?}"));
        expected.insert(format!("PARTIAL_{name}"), slot as u32);
    }
    for slot in MlpPartial::ALL {
        let name = screaming_snake(&format!("{slot:?}"));
        expected.insert(format!("PARTIAL_MLP_{name}"), slot as u32);
    }
    for kind in TargetKind::ALL {
        let family = screaming_snake(&format!("{kind:?}"));
        for (position, name) in kind.gpu_params().iter().enumerate() {
            expected.insert(format!("PARAM_{family}_{name}"), position as u32);
        }
    }
    use atmc_lab::engine::Axis;
    for (name, axis) in [
        ("AXIS_THETA0", Axis::Theta(0)),
        ("AXIS_THETA1", Axis::Theta(1)),
        ("AXIS_P0", Axis::P(0)),
        ("AXIS_P1", Axis::P(1)),
        ("AXIS_XI0", Axis::Xi(0)),
        ("AXIS_XI1", Axis::Xi(1)),
    ] {
        expected.insert(name.into(), axis.index());
    }
    use atmc_lab::math::mlp::{MAX_ACTIVATIONS, MAX_CLASSES, MAX_WIDTH};
    for (name, value) in [
        ("FLAG_XI_OVERWRITE", shader_interface::FLAG_XI_OVERWRITE),
        ("FLAG_SGNHT_SHARED", shader_interface::FLAG_SGNHT_SHARED),
        (
            "FLAG_THERMOSTAT_RUNNING",
            shader_interface::FLAG_THERMOSTAT_RUNNING,
        ),
        ("HIST_AXIS_SHIFT", shader_interface::HIST_AXIS_SHIFT),
        ("CHAIN_WORKGROUP", CHAIN_WORKGROUP),
        ("CHAIN_PARTIALS", shader_interface::CHAIN_PARTIALS),
        ("SUPERCHAIN_FIELDS", shader_interface::SUPERCHAIN_FIELDS),
        ("MLP_WORKGROUP", MLP_WORKGROUP),
        ("MLP_PARTIALS", shader_interface::MLP_PARTIALS),
        ("MLP_NET_WORKGROUP", shader_interface::MLP_NET_WORKGROUP),
        ("MLP_NET_PARAMS", shader_interface::MLP_NET_PARAMS),
        ("MLP_NET_STAGE", shader_interface::MLP_NET_STAGE),
        ("MLP_NET_OWNED", shader_interface::MLP_NET_OWNED),
        ("MAX_WIDTH", MAX_WIDTH as u32),
        ("MAX_CLASSES", MAX_CLASSES as u32),
        ("MAX_LAYERS", atmc_lab::engine::mlp::MAX_LAYERS as u32),
        ("MAX_ACTIVATIONS", MAX_ACTIVATIONS as u32),
    ] {
        expected.insert(name.into(), value);
    }
    let generated: HashMap<String, u32> =
        constants().into_iter().map(|c| (c.name, c.value)).collect();
    assert_eq!(generated, expected, "the generator's table");

    for (engine, source, _, workgroup) in engines() {
        let module = parse(source);
        let mut found = HashMap::new();
        for (_, c) in module.constants.iter() {
            if let (Some(name), naga::Expression::Literal(naga::Literal::U32(v))) =
                (&c.name, &module.global_expressions[c.init])
            {
                found.insert(name.clone(), *v);
            }
        }
        for (name, value) in &expected {
            assert_eq!(found.get(name), Some(value), "{engine}: {name}");
        }
        assert!(!module.entry_points.is_empty());
        for ep in &module.entry_points {
            assert_eq!(
                ep.workgroup_size,
                [workgroup, 1, 1],
                "{engine}: {}",
                ep.name
            );
        }
        let mut validator = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::default(),
        );
        if let Err(e) = validator.validate(&module) {
            panic!("{engine}: {}", e.emit_to_string(source));
        }
    }
}

/// The checker reports a change made on one side only, by name: two fields swapped, one
/// field's type changed, one constant's value changed, one constant dropped, a binding moved,
/// its access or its block changed, a binding and an override added by hand, an override
/// dropped or retyped.
#[test]
fn checker_reports_one_sided_changes() {
    let program = Program::Chain2;
    let original = generated_wgsl(program);
    assert_eq!(check_wgsl(&original, program), Vec::<String>::new());
    let replace = |s: &str, from: &str, to: &str| {
        assert_eq!(
            s.matches(from).count(),
            1,
            "{from:?} once in the generated WGSL"
        );
        s.replacen(from, to, 1)
    };
    let mut altered = replace(&original, "    h: f32,\n", "    @@H@@\n");
    altered = replace(&altered, "    mass: f32,\n", "    h: f32,\n");
    altered = replace(&altered, "    @@H@@\n", "    mass: f32,\n");
    altered = replace(&altered, "    steps: u32,\n", "    steps: f32,\n");
    altered = replace(
        &altered,
        "    target_params: array<vec4<f32>, 2>,\n",
        "    target_params: array<vec4<u32>, 2>,\n",
    );
    altered = replace(
        &altered,
        &format!(
            "const SAMPLER_SGLD: u32 = {}u;",
            SamplerKind::Sgld.gpu_code()
        ),
        "const SAMPLER_SGLD: u32 = 7u;",
    );
    altered = replace(
        &altered,
        &format!(
            "const STREAM_MINIBATCH: u32 = {}u;\n",
            Stream::Minibatch.gpu_code()
        ),
        "",
    );
    let chains = Chain2Binding::Chains.index();
    altered = replace(
        &altered,
        &format!("@binding({chains}) var<storage, read_write> chains:"),
        "@binding(9) var<storage, read_write> chains:",
    );
    altered = replace(
        &altered,
        "var<storage, read> data:",
        "var<storage, read_write> data:",
    );
    altered = replace(
        &altered,
        "var<uniform> chain2_params: Chain2Params;",
        "var<uniform> chain2_params: SamplerParams;",
    );
    altered = replace(&altered, "override MAY_BE_CYCLICAL: bool = true;\n", "");
    altered = replace(
        &altered,
        "override SPECIALISED_TARGET: u32;",
        "override SPECIALISED_TARGET: bool;",
    );
    altered.push_str(
        "@group(0) @binding(12) var<storage, read> extra: array<u32>;\n\
         override MAY_BE_EXTRA: bool = true;\n",
    );
    let report = check_wgsl(&altered, program);
    let expected = [
        "SamplerParams.h: offset 20 in the WGSL, 16 in Rust".to_owned(),
        "SamplerParams.mass: offset 16 in the WGSL, 20 in Rust".to_owned(),
        "Chain2Params.steps: type f32 in the WGSL, u32 in Rust".to_owned(),
        "Chain2Params.target_params: type array<vec4<u32>, 2> in the WGSL, array<vec4<f32>, 2> in Rust".to_owned(),
        format!(
            "SAMPLER_SGLD: 7 in the WGSL, {} in Rust",
            SamplerKind::Sgld.gpu_code()
        ),
        "STREAM_MINIBATCH: missing".to_owned(),
        format!("binding chains: @group(0) @binding(9) in the WGSL, @group(0) @binding({chains}) in Rust"),
        "binding data: var<storage, read_write> in the WGSL, var<storage, read> in Rust".to_owned(),
        "binding chain2_params: type SamplerParams in the WGSL, Chain2Params in Rust".to_owned(),
        "binding extra: @group(0) @binding(12) in the WGSL only".to_owned(),
        "override MAY_BE_CYCLICAL: missing from the WGSL".to_owned(),
        "override SPECIALISED_TARGET: type bool in the WGSL, u32 in Rust".to_owned(),
        "override MAY_BE_EXTRA: in the WGSL only".to_owned(),
    ];
    for line in &expected {
        assert!(
            report.iter().any(|l| l.starts_with(line.as_str())),
            "{line} not reported in {report:#?}"
        );
    }
    // Nothing else is blamed, but the swapped fields' sizes and the retyped fields' sizes.
    for line in &report {
        assert!(
            expected.iter().any(|e| line.starts_with(e.as_str()))
                || line.starts_with("SamplerParams.h:")
                || line.starts_with("SamplerParams.mass:")
                || line.starts_with("Chain2Params.steps:")
                || line.starts_with("Chain2Params.target_params:"),
            "unexpected: {line}"
        );
    }

    // A struct on one side only, and WGSL that no longer parses.
    let mlp = generated_wgsl(Program::Mlp);
    let mut without_slice = replace(&mlp, "struct Slice {", "struct SliceRenamed {");
    without_slice = replace(&without_slice, ": Slice;", ": SliceRenamed;");
    assert!(
        check_wgsl(&without_slice, Program::Mlp)
            .contains(&"struct Slice: missing from the WGSL".into())
    );
    let broken = replace(
        &original,
        "struct SamplerParams {",
        "struct SamplerParams {{",
    );
    let report = check_wgsl(&broken, program);
    assert_eq!(report.len(), 1);
    assert!(
        report[0].starts_with("the WGSL does not parse"),
        "{report:?}"
    );
}

/// Names no `.wgsl` file may declare by hand: every generated constant, struct and override.
fn generated_names() -> (Vec<String>, Vec<&'static str>, Vec<&'static str>) {
    let constants: Vec<String> = constants().into_iter().map(|c| c.name).collect();
    let structs: Vec<&str> = SHARED_STRUCTS.iter().map(|s| s.wgsl_name).collect();
    let overrides: Vec<&str> = Program::ALL
        .iter()
        .flat_map(|p| p.overrides().iter().map(|o| o.name))
        .collect();
    (constants, structs, overrides)
}

/// The lines of a hand-written WGSL `text` that declare a generated name: a constant or an
/// override (by name or by family), a shared struct, or any binding (every binding is
/// generated).
fn hand_declared_generated_names(text: &str) -> Vec<String> {
    let (constants, structs, overrides) = generated_names();
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let at = format!("{}: {line}", i + 1);
        let code = line.split("//").next().unwrap().trim();
        let mut words = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
        match words.next() {
            Some("const" | "override") => {
                let name = words.find(|w| !w.is_empty()).unwrap_or("");
                if constants.iter().any(|g| g == name) || overrides.contains(&name) {
                    found.push(format!("generated constant: {at}"));
                } else if GENERATED_PREFIXES.iter().any(|p| name.starts_with(p)) {
                    found.push(format!("constant of a generated family: {at}"));
                } else if code.starts_with("override") {
                    found.push(format!("override not declared in Rust: {at}"));
                }
            }
            Some("struct") => {
                let name = words.find(|w| !w.is_empty()).unwrap_or("");
                if structs.contains(&name) {
                    found.push(format!("generated struct: {at}"));
                }
            }
            _ => {}
        }
        if code.contains("@binding(")
            || code.contains("var<uniform")
            || code.contains("var<storage")
        {
            found.push(format!("binding: {at}"));
        }
    }
    found
}

/// No file in shaders/ declares by hand a constant, struct, override or binding that the
/// prelude generates.
#[test]
fn shaders_declare_no_generated_name() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let found = hand_declared_generated_names(&text);
        assert!(found.is_empty(), "{}: {found:#?}", path.display());
    }
    assert!(files >= 7, "found {files} WGSL files in {}", dir.display());
}

/// The scan above catches each kind of hand-written declaration, and passes ordinary code.
#[test]
fn the_scan_catches_hand_declarations() {
    let hand = "\
const PARTIAL_ALIVE: u32 = 0u;
const PARAM_BANANA_Z: u32 = 5u;
override SPECIALISED_SAMPLER: u32;
override MAY_BE_FAST: bool = true;
struct Chain2Params { x: u32 }
@group(0) @binding(3) var<storage, read_write> partials: array<f32>;
var<uniform> slice: Slice;
";
    let found = hand_declared_generated_names(hand);
    for (line, kind) in [
        (1, "generated constant"),
        (2, "constant of a generated family"),
        (3, "generated constant"),
        (4, "override not declared in Rust"),
        (5, "generated struct"),
        (6, "binding"),
        (7, "binding"),
    ] {
        assert!(
            found
                .iter()
                .any(|f| f.starts_with(&format!("{kind}: {line}:"))),
            "{kind} at line {line} not caught: {found:#?}"
        );
    }
    assert_eq!(found.len(), 7, "{found:#?}");
    let ordinary = "\
const SELU_LAMBDA: f32 = 1.050701;
var<workgroup> scratch: array<f32, 4>;
fn target_param(position: u32) -> f32 { return chain2_params.target_params[0][0]; }
";
    assert_eq!(
        hand_declared_generated_names(ordinary),
        Vec::<String>::new()
    );
}
