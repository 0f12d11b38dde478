//! The host–shader interface (`src/engine/shader_interface.rs`): the WGSL the engines compile
//! agrees with the Rust structs and codes, checked with naga (wgpu's WGSL front end) without a
//! GPU; the checker itself catches a change made on one side only; and no shader declares a
//! generated name by hand.

use atmc_lab::engine::gpu::SHADER_SOURCE;
use atmc_lab::engine::mlp::gpu::MLP_SHADER_SOURCE;
use atmc_lab::engine::shader_interface::{
    self, CHAIN_WORKGROUP, GENERATED_PREFIXES, GpuParams, MLP_WORKGROUP, MlpRegion, SHARED_STRUCTS,
    check_wgsl, constants, generated_wgsl,
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

/// Every composed shader: name, source, the workgroup size of every entry point.
fn engines() -> [(&'static str, &'static str, u32); 3] {
    [
        ("2-D engine", SHADER_SOURCE.as_str(), CHAIN_WORKGROUP),
        ("MLP engine", MLP_SHADER_SOURCE.as_str(), MLP_WORKGROUP),
        (
            "sphere engine",
            SPHERE_SHADER_SOURCE.as_str(),
            CHAIN_WORKGROUP,
        ),
    ]
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
    for (engine, source, _) in engines() {
        assert_eq!(check_wgsl(source), Vec::<String>::new(), "{engine}");
    }
}

/// `Params` member by member, straight from naga's module: name, offset, size and scalar
/// kind against the Rust struct, and the block's size.
#[test]
fn params_members_have_rusts_layout() {
    for (engine, source, _) in engines() {
        let module = parse(source);
        let mut layouter = naga::proc::Layouter::default();
        layouter.update(module.to_ctx()).unwrap();
        let (members, span) = module
            .types
            .iter()
            .find_map(|(_, t)| match &t.inner {
                naga::TypeInner::Struct { members, span }
                    if t.name.as_deref() == Some("Params") =>
                {
                    Some((members.clone(), *span))
                }
                _ => None,
            })
            .unwrap_or_else(|| panic!("{engine}: no struct Params"));
        assert_eq!(
            span as usize,
            size_of::<GpuParams>(),
            "{engine}: size of Params"
        );
        let fields = GpuParams::SHARED.fields;
        let names: Vec<_> = members.iter().map(|m| m.name.clone().unwrap()).collect();
        let rust_names: Vec<_> = fields.iter().map(|f| f.name.to_string()).collect();
        assert_eq!(names, rust_names, "{engine}: members of Params");
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
        // A few by name, against the compiler's own offsets.
        let offset = |name: &str| members.iter().find(|m| m.name.as_deref() == Some(name));
        for (name, expected) in [
            ("seed_lo", core::mem::offset_of!(GpuParams, seed_lo)),
            (
                "target_params",
                core::mem::offset_of!(GpuParams, target_params),
            ),
            ("hist_u", core::mem::offset_of!(GpuParams, hist_u)),
            ("mlp_sizes", core::mem::offset_of!(GpuParams, mlp_sizes)),
            (
                "mlp_focus_chain",
                core::mem::offset_of!(GpuParams, mlp_focus_chain),
            ),
        ] {
            assert_eq!(
                offset(name).unwrap().offset as usize,
                expected,
                "{engine}: {name}"
            );
        }
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
        ("HIST_AXIS_SHIFT", shader_interface::HIST_AXIS_SHIFT),
        ("CHAIN_WORKGROUP", CHAIN_WORKGROUP),
        ("CHAIN_PARTIALS", shader_interface::CHAIN_PARTIALS),
        ("MLP_WORKGROUP", MLP_WORKGROUP),
        ("MLP_PARTIALS", shader_interface::MLP_PARTIALS),
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

    for (engine, source, workgroup) in engines() {
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

/// The checker reports a change made on the WGSL side only, by name: two fields swapped, one
/// field's type changed, one constant's value changed, one constant dropped.
#[test]
fn checker_reports_one_sided_changes() {
    let original = generated_wgsl();
    assert_eq!(check_wgsl(&original), Vec::<String>::new());
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
    let report = check_wgsl(&altered);
    for name in [
        "Params.h:",
        "Params.mass:",
        "Params.steps: type f32 in the WGSL, u32 in Rust",
        "Params.target_params: type array<vec4<u32>, 2> in the WGSL, array<vec4<f32>, 2> in Rust",
        "SAMPLER_SGLD: 7 in the WGSL, 1 in Rust",
        "STREAM_MINIBATCH: missing",
    ] {
        assert!(
            report.iter().any(|line| line.starts_with(name)),
            "{name} not reported in {report:#?}"
        );
    }
    // Nothing else is blamed.
    for line in &report {
        assert!(
            [
                "Params.h:",
                "Params.mass:",
                "Params.steps:",
                "Params.target_params:",
                "SAMPLER_SGLD:",
                "STREAM_MINIBATCH:"
            ]
            .iter()
            .any(|name| line.starts_with(name)),
            "unexpected: {line}"
        );
    }
    // Swapped fields: both offsets are named.
    assert!(
        report
            .iter()
            .any(|l| l.starts_with("Params.h: offset 36 in the WGSL, 32 in Rust"))
    );
    assert!(
        report
            .iter()
            .any(|l| l.starts_with("Params.mass: offset 32 in the WGSL, 36 in Rust"))
    );

    // A struct on one side only, and WGSL that no longer parses.
    let without_slice = replace(&original, "struct Slice {", "struct SliceRenamed {");
    assert!(check_wgsl(&without_slice).contains(&"struct Slice: missing from the WGSL".into()));
    let broken = replace(&original, "struct Params {", "struct Params {{");
    let report = check_wgsl(&broken);
    assert_eq!(report.len(), 1);
    assert!(
        report[0].starts_with("the WGSL does not parse"),
        "{report:?}"
    );
}

/// No file in shaders/ declares by hand a constant or struct that the prelude generates, or
/// the `params` binding.
#[test]
fn shaders_declare_no_generated_name() {
    let generated: Vec<String> = constants().into_iter().map(|c| c.name).collect();
    let structs: Vec<&str> = SHARED_STRUCTS.iter().map(|s| s.wgsl_name).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("shaders");
    let mut files = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().and_then(|e| e.to_str()) != Some("wgsl") {
            continue;
        }
        files += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            let at = format!("{}:{}: {line}", path.display(), i + 1);
            let code = line.split("//").next().unwrap().trim();
            let mut words = code.split(|c: char| !(c.is_alphanumeric() || c == '_'));
            match words.next() {
                Some("const" | "override") => {
                    let name = words.find(|w| !w.is_empty()).unwrap_or("");
                    assert!(
                        !generated.iter().any(|g| g == name),
                        "generated constant: {at}"
                    );
                    assert!(
                        !GENERATED_PREFIXES.iter().any(|p| name.starts_with(p)),
                        "constant of a generated family: {at}"
                    );
                }
                Some("struct") => {
                    let name = words.find(|w| !w.is_empty()).unwrap_or("");
                    assert!(!structs.contains(&name), "generated struct: {at}");
                }
                _ => {}
            }
            assert!(
                !code.contains("var<uniform> params"),
                "generated binding: {at}"
            );
        }
    }
    assert!(files >= 7, "found {files} WGSL files in {}", dir.display());
}
