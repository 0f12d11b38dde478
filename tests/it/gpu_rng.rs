//! `shaders/rng.wgsl` reproduces the Philox streams of `src/math/rng.rs` bit for bit,
//! including Random123's known answers, and Box–Muller to float rounding.

use crate::common;
use atmc_lab::math::rng::{SequentialRng, box_muller, philox4x32_10};
use rand::Rng;
use wgpu::util::DeviceExt;

const CHECK_ENTRY: &str = r#"
@group(0) @binding(0) var<storage, read> counters: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> keys: array<vec2<u32>>;
@group(0) @binding(2) var<storage, read_write> words: array<vec4<u32>>;
@group(0) @binding(3) var<storage, read_write> normals: array<vec2<f32>>;

@compute @workgroup_size(64)
fn check(@builtin(global_invocation_id) id: vec3<u32>) {
    let i = id.x;
    if (i < arrayLength(&words)) {
        let b = philox4x32_10(counters[i], keys[i]);
        words[i] = b;
        normals[i] = box_muller(b.x, b.y);
    }
}
"#;

#[test]
fn wgsl_philox_matches_rust_bit_for_bit() {
    let ctx = common::gpu();
    let mut counters: Vec<[u32; 4]> = vec![
        [0, 0, 0, 0],
        [u32::MAX; 4],
        [0x243f_6a88, 0x85a3_08d3, 0x1319_8a2e, 0x0370_7344],
    ];
    let mut keys: Vec<[u32; 2]> = vec![[0, 0], [u32::MAX; 2], [0xa409_3822, 0x299f_31d0]];
    let mut rng = SequentialRng::new(99, 0);
    for _ in 0..1021 {
        counters.push([
            rng.next_u32(),
            rng.next_u32(),
            rng.next_u32(),
            rng.next_u32(),
        ]);
        keys.push([rng.next_u32(), rng.next_u32()]);
    }
    let n = counters.len();
    let device = &ctx.device;
    let source = format!("{}{}", include_str!("../../shaders/rng.wgsl"), CHECK_ENTRY);
    let module = device.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("rng check"),
        source: wgpu::ShaderSource::Wgsl(source.into()),
    });
    let pipeline = device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("rng check"),
        layout: None,
        module: &module,
        entry_point: Some("check"),
        compilation_options: Default::default(),
        cache: None,
    });
    let input = |label, bytes: &[u8]| {
        device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytes,
            usage: wgpu::BufferUsages::STORAGE,
        })
    };
    let output = |label, size| {
        device.create_buffer(&wgpu::BufferDescriptor {
            label: Some(label),
            size,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        })
    };
    let counters_buf = input("counters", bytemuck::cast_slice(&counters));
    let keys_buf = input("keys", bytemuck::cast_slice(&keys));
    let words_buf = output("words", 16 * n as u64);
    let normals_buf = output("normals", 8 * n as u64);
    let bind_group = device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: counters_buf.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: keys_buf.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 2,
                resource: words_buf.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 3,
                resource: normals_buf.as_entire_binding(),
            },
        ],
    });
    let staging = device.create_buffer(&wgpu::BufferDescriptor {
        label: None,
        size: 24 * n as u64,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    let mut encoder = device.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bind_group, &[]);
        pass.dispatch_workgroups((n as u32).div_ceil(64), 1, 1);
    }
    encoder.copy_buffer_to_buffer(&words_buf, 0, &staging, 0, 16 * n as u64);
    encoder.copy_buffer_to_buffer(&normals_buf, 0, &staging, 16 * n as u64, 8 * n as u64);
    ctx.queue.submit([encoder.finish()]);
    staging.map_async(wgpu::MapMode::Read, .., |r| r.expect("map"));
    device.poll(wgpu::PollType::wait_indefinitely()).unwrap();
    let bytes = staging.get_mapped_range(..).unwrap().to_vec();
    let words: &[[u32; 4]] = bytemuck::cast_slice(&bytes[..16 * n]);
    let normals: &[[f32; 2]] = bytemuck::cast_slice(&bytes[16 * n..]);
    assert_eq!(
        words[0],
        [0x6627_e8d5, 0xe169_c58d, 0xbc57_ac4c, 0x9b00_dbd8]
    );
    assert_eq!(
        words[1],
        [0x408f_276d, 0x41c8_3b0e, 0xa20b_c7c6, 0x6d54_51fd]
    );
    assert_eq!(
        words[2],
        [0xd16c_fe09, 0x94fd_cceb, 0x5001_e420, 0x2412_6ea1]
    );
    let mut worst = 0.0f32;
    for i in 0..n {
        assert_eq!(words[i], philox4x32_10(counters[i], keys[i]), "counter {i}");
        let (z0, z1) = box_muller(words[i][0], words[i][1]);
        worst = worst
            .max((z0 - normals[i][0]).abs())
            .max((z1 - normals[i][1]).abs());
    }
    assert!(worst < 1e-5, "Box–Muller differs by {worst}");
}
