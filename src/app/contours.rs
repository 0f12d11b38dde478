//! Iso-lines of a gridded density (marching squares), for the target's contours.

/// Line segments (x0, y0, x1, y1) in data coordinates where the grid values cross `level`.
/// `values` are row-major (`iy * nx + ix`) at the cell centres of the grid over `x` × `y`.
pub fn iso_lines(
    values: &[f64],
    nx: usize,
    ny: usize,
    x: [f64; 2],
    y: [f64; 2],
    level: f64,
) -> Vec<[f64; 4]> {
    let dx = (x[1] - x[0]) / nx as f64;
    let dy = (y[1] - y[0]) / ny as f64;
    let px = |ix: f64| x[0] + (ix + 0.5) * dx;
    let py = |iy: f64| y[0] + (iy + 0.5) * dy;
    let mut out = Vec::new();
    for iy in 0..ny.saturating_sub(1) {
        for ix in 0..nx.saturating_sub(1) {
            // Corners counter-clockwise from the bottom left.
            let v = [
                values[iy * nx + ix],
                values[iy * nx + ix + 1],
                values[(iy + 1) * nx + ix + 1],
                values[(iy + 1) * nx + ix],
            ];
            let c = [(0.0, 0.0), (1.0, 0.0), (1.0, 1.0), (0.0, 1.0)];
            // Crossing points on the four edges, in order.
            let mut pts = Vec::with_capacity(4);
            for e in 0..4 {
                let (a, b) = (v[e], v[(e + 1) % 4]);
                if (a < level) != (b < level) {
                    let t = (level - a) / (b - a);
                    let (ca, cb) = (c[e], c[(e + 1) % 4]);
                    pts.push((
                        px(ix as f64 + ca.0 + t * (cb.0 - ca.0)),
                        py(iy as f64 + ca.1 + t * (cb.1 - ca.1)),
                    ));
                }
            }
            // Two crossings: one segment; four (a saddle): pair them up in order.
            for pair in pts.chunks_exact(2) {
                out.push([pair[0].0, pair[0].1, pair[1].0, pair[1].1]);
            }
        }
    }
    out
}

/// Density levels whose super-level sets hold the given probability masses (e.g. 0.5, 0.9,
/// 0.99), from cell masses: the highest-density regions.
pub fn mass_levels(masses: &[f64], cell_area: f64, probabilities: &[f64]) -> Vec<f64> {
    let mut sorted: Vec<f64> = masses.to_vec();
    sorted.sort_by(|a, b| b.total_cmp(a));
    let total: f64 = sorted.iter().sum();
    probabilities
        .iter()
        .map(|&p| {
            let mut acc = 0.0;
            for &m in &sorted {
                acc += m;
                if acc >= p * total {
                    return m / cell_area;
                }
            }
            0.0
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn circle_contour_lies_on_the_circle() {
        let n = 64;
        let mut v = vec![0.0; n * n];
        for iy in 0..n {
            for ix in 0..n {
                let x = -2.0 + (ix as f64 + 0.5) * 4.0 / n as f64;
                let y = -2.0 + (iy as f64 + 0.5) * 4.0 / n as f64;
                v[iy * n + ix] = x * x + y * y;
            }
        }
        let segs = iso_lines(&v, n, n, [-2.0, 2.0], [-2.0, 2.0], 1.0);
        assert!(segs.len() > 50);
        for s in segs {
            for (x, y) in [(s[0], s[1]), (s[2], s[3])] {
                assert!(((x * x + y * y).sqrt() - 1.0).abs() < 0.01);
            }
        }
    }

    #[test]
    fn mass_levels_of_a_uniform_block() {
        let masses = [0.25, 0.25, 0.25, 0.25, 0.0, 0.0];
        let l = mass_levels(&masses, 0.5, &[0.5, 0.99]);
        assert_eq!(l, vec![0.5, 0.5]);
    }
}
