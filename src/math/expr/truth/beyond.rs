//! Beyond the truth's box (docs/MATH.md §9, *Beyond the box*). The truth's cell masses and
//! exact samples are those of exp(−U) restricted to its box. Here the box is grown outwards,
//! each side pushed out by half the box's width while the strip it adds still matters, and the
//! strips are integrated: their masses say how much of the mass lies outside the box, and their
//! moments, added to the box's, give moments over a box large enough that they settle (a
//! heavy tail's variance lives far outside any box that holds all but a little of the mass).
//!
//! Math returns data ([`Beyond`]); the front ends put it in words.

use super::{ExprTarget, MAX_EXTENT, SCAN_CELLS, SCAN_LEAVES, Stage, Watch};
use crate::math::grid::Grid2;
use std::fmt;

/// Largest change of a moment (a mean in standard deviations, a variance relative to itself)
/// that counts as settled, both over the last growth of the box and as extrapolated over all
/// the growths still to come.
pub const MOMENT_TOLERANCE: f64 = 0.01;

/// A side stops growing once its last strip holds less than this share of the mass found
/// outside the box so far and moves no moment by more than a tenth of [`MOMENT_TOLERANCE`].
pub const NEGLIGIBLE_STRIP: f64 = 1e-3;

/// The look beyond the box may spend this share of the truth's work limit (and never more than
/// is left of it).
const BEYOND_WORK_SHARE: u64 = 8;

/// Most growths of the box (doubling from [`super::MIN_WIDTH`] reaches [`MAX_EXTENT`] in 24).
const MAX_GROWTHS: u32 = 64;

/// ∫ exp(−U)/Z_box times 1, θ₁, θ₂, θ₁², θ₁θ₂ and θ₂² over a region, θ measured from the
/// truth box's centre (Z_box: the normaliser of the truth's box), so that sums over regions
/// add up.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(super) struct Sums([f64; 6]);

impl Sums {
    /// The sums of the cell masses `masses` (row-major on `grid`) times `scale`, each cell's
    /// mass spread evenly over it (its second moment gains the cell's width²/12), θ measured
    /// from `origin`.
    pub(super) fn of_cells(grid: &Grid2, masses: &[f64], scale: f64, origin: [f64; 2]) -> Sums {
        let [dx, dy] = grid.cell_size();
        let (wx, wy) = (dx * dx / 12.0, dy * dy / 12.0);
        let nx = grid.nx as usize;
        let mut s = [0.0; 6];
        for (i, m) in masses.iter().enumerate() {
            let m = m * scale;
            let c = grid.cell_center((i % nx) as u32, (i / nx) as u32);
            let (x, y) = (c[0] - origin[0], c[1] - origin[1]);
            s[0] += m;
            s[1] += m * x;
            s[2] += m * y;
            s[3] += m * (x * x + wx);
            s[4] += m * x * y;
            s[5] += m * (y * y + wy);
        }
        Sums(s)
    }

    pub(super) fn plus(self, other: Sums) -> Sums {
        Sums(std::array::from_fn(|k| self.0[k] + other.0[k]))
    }

    fn minus(self, other: Sums) -> Sums {
        Sums(std::array::from_fn(|k| self.0[k] - other.0[k]))
    }

    fn mass(self) -> f64 {
        self.0[0]
    }

    /// Mean and covariance (c11, c12, c22) of the region's density, θ from `origin`.
    pub(super) fn moments(self, origin: [f64; 2]) -> ([f64; 2], [f64; 3]) {
        let [m, x, y, xx, xy, yy] = self.0;
        let (mx, my) = (x / m, y / m);
        (
            [origin[0] + mx, origin[1] + my],
            [xx / m - mx * mx, xy / m - mx * my, yy / m - my * my],
        )
    }

    /// The moments judged: mean θ₁, mean θ₂, Var θ₁, Var θ₂.
    fn judged(self, origin: [f64; 2]) -> [f64; 4] {
        let (mean, cov) = self.moments(origin);
        [mean[0], mean[1], cov[0], cov[2]]
    }
}

/// How far the judged moments `a` are from `b`, moment by moment: a mean in standard
/// deviations of `b`, a variance relative to `b`'s.
fn changes(a: [f64; 4], b: [f64; 4]) -> [f64; 4] {
    [
        (a[0] - b[0]).abs() / b[2].sqrt(),
        (a[1] - b[1]).abs() / b[3].sqrt(),
        (a[2] - b[2]).abs() / b[2],
        (a[3] - b[3]).abs() / b[3],
    ]
}

/// The largest of the changes (NaN counts as a change too large).
fn largest(d: [f64; 4]) -> f64 {
    d.iter().fold(
        0.0f64,
        |m, &v| if v.is_nan() { f64::INFINITY } else { m.max(v) },
    )
}

/// A moment of one coordinate (0: θ₁, 1: θ₂).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moment {
    /// The mean of θᵢ.
    Mean(usize),
    /// The variance of θᵢ.
    Variance(usize),
}

impl Moment {
    /// The judged moments in [`Sums::judged`]'s order.
    const JUDGED: [Moment; 4] = [
        Moment::Mean(0),
        Moment::Mean(1),
        Moment::Variance(0),
        Moment::Variance(1),
    ];
}

impl fmt::Display for Moment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let axis = |c: &usize| if *c == 0 { "θ₁" } else { "θ₂" };
        match self {
            Moment::Mean(c) => write!(f, "mean {}", axis(c)),
            Moment::Variance(c) => write!(f, "Var {}", axis(c)),
        }
    }
}

/// Why the box stopped growing.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Growth {
    /// Every side's last strip was negligible, or the moments settled ([`MOMENT_TOLERANCE`]).
    Settled,
    /// The share of the work limit the look beyond may spend ran out.
    WorkLimit,
    /// A side that still mattered reached ±[`MAX_EXTENT`].
    Extent,
    /// exp(−U) could not be integrated in a strip: infinite near `at` (a pole), or beyond f64.
    NotFinite {
        /// Where U was lowest in that strip.
        at: [f64; 2],
    },
}

/// A moment that had not settled when the box stopped growing: its values in two of the boxes
/// looked at, the largest and one at most half as wide.
#[derive(Clone, Debug, PartialEq)]
pub struct Unsettled {
    /// The moment that moved most over the last growth.
    pub moment: Moment,
    /// Its value within a box at most half as wide as the largest (along some axis), and
    /// within the largest box looked at.
    pub values: [f64; 2],
    /// Those two boxes (θ₁ range, θ₂ range).
    pub boxes: [[[f64; 2]; 2]; 2],
}

/// What lies beyond the truth's box: the share of the mass outside it, and the box the
/// moments are taken over (docs/MATH.md §9, *Beyond the box*).
#[derive(Clone, Debug, PartialEq)]
pub struct Beyond {
    /// The estimated share of the whole mass of exp(−U) that lies outside the truth's box:
    /// the strips' masses plus what their decay says lies beyond the last. NaN when nothing
    /// beyond the box could be looked at (the work limit).
    pub outside_mass: f64,
    /// Whether [`Self::outside_mass`] is only a lower bound: a side whose strips had not begun
    /// to thin out when the growth stopped.
    pub at_least: bool,
    /// The box the moments are taken over: the truth's box where its moments agree with those
    /// of the grown boxes (to a tenth of [`MOMENT_TOLERANCE`]), else the largest box looked at.
    pub moment_box: [[f64; 2]; 2],
    /// The estimated share of the mass outside [`Self::moment_box`].
    pub moment_box_outside: f64,
    /// Why the growth stopped.
    pub growth: Growth,
    /// The moment that had not settled when the growth stopped; `None` when they settled.
    pub unsettled: Option<Unsettled>,
    /// The sums over `moment_box` less the truth's box.
    pub(super) added: Sums,
}

impl Beyond {
    /// Before anything beyond the box was looked at.
    pub(super) fn unknown(bounds: [[f64; 2]; 2]) -> Self {
        Beyond {
            outside_mass: f64::NAN,
            at_least: false,
            moment_box: bounds,
            moment_box_outside: f64::NAN,
            growth: Growth::WorkLimit,
            unsettled: None,
            added: Sums::default(),
        }
    }
}

/// The centre of a box: where [`Sums`] measure θ from.
pub(super) fn centre(b: [[f64; 2]; 2]) -> [f64; 2] {
    [0.5 * (b[0][0] + b[0][1]), 0.5 * (b[1][0] + b[1][1])]
}

/// Whether the judged moments of the boxes so far (`judged[k]` within the k-th box) have
/// settled: the last growth moved every moment by at most a tenth of [`MOMENT_TOLERANCE`],
/// or by at most the tolerance while the growths shrink its change geometrically (ratio r < 1
/// over the last two), so that the changes still to come, d·r/(1 − r), stay within it too.
fn settled(judged: &[[f64; 4]]) -> bool {
    let k = judged.len() - 1;
    if k == 0 {
        return false;
    }
    let last = changes(judged[k - 1], judged[k]);
    let before = (k >= 2).then(|| changes(judged[k - 2], judged[k - 1]));
    (0..4).all(|i| {
        let d = last[i];
        if d <= 0.1 * MOMENT_TOLERANCE {
            return true;
        }
        let Some(before) = before else { return false };
        let r = d / before[i];
        r < 1.0 && d <= MOMENT_TOLERANCE && d * r / (1.0 - r) <= MOMENT_TOLERANCE
    })
}

impl ExprTarget {
    /// Grows the truth's box side by side and integrates the strips it adds
    /// ([`Beyond`]); `inside` are the sums over the box itself. Never refuses: a strip that
    /// cannot be integrated, the work limit or ±[`MAX_EXTENT`] end the growth, and the result
    /// says so.
    pub(super) fn look_beyond(&self, inside: Sums, watch: &mut Watch) -> Beyond {
        let origin = centre(self.bounds);
        let start = watch.work.spent();
        let budget =
            (watch.work.limit / BEYOND_WORK_SHARE).min(watch.work.limit.saturating_sub(start));
        let mut b = self.bounds;
        // Per axis, per side (low, high): still growing.
        let mut open = [[true; 2]; 2];
        // Per side: stopped by ±MAX_EXTENT while it still mattered.
        let mut stuck = [[false; 2]; 2];
        let mut totals = vec![inside];
        let mut boxes = vec![b];
        let mut judged = vec![inside.judged(origin)];
        // The masses of each side's last two strips (the last one second).
        let mut strip_masses = [[[f64::NAN; 2]; 2]; 2];
        let mut outside = 0.0;
        let growth = 'grow: loop {
            if open.iter().flatten().all(|o| !o) {
                break if stuck.iter().flatten().any(|s| *s) {
                    Growth::Extent
                } else {
                    Growth::Settled
                };
            }
            if watch.work.spent() - start > budget || boxes.len() as u32 > MAX_GROWTHS {
                break Growth::WorkLimit;
            }
            watch.enter(Stage::LookingBeyond {
                round: boxes.len() as u32,
                bounds: b,
            });
            let mut next = b;
            for c in 0..2 {
                let half = 0.5 * (b[c][1] - b[c][0]);
                for s in 0..2 {
                    if !open[c][s] {
                        continue;
                    }
                    let pushed = if s == 0 {
                        (b[c][0] - half).max(-MAX_EXTENT)
                    } else {
                        (b[c][1] + half).min(MAX_EXTENT)
                    };
                    if pushed == b[c][s] {
                        // A side that still mattered cannot go further.
                        open[c][s] = false;
                        stuck[c][s] = true;
                    } else {
                        next[c][s] = pushed;
                    }
                }
            }
            if next == b {
                continue;
            }
            // The strips: θ₁'s sides span the grown box's θ₂ range (the corners are theirs),
            // θ₂'s sides the old box's θ₁ range; cells as those of a scan of the grown box.
            let cell = [
                (next[0][1] - next[0][0]) / f64::from(SCAN_CELLS),
                (next[1][1] - next[1][0]) / f64::from(SCAN_CELLS),
            ];
            let mut strips = [[None; 2]; 2];
            for c in 0..2 {
                for s in 0..2 {
                    if next[c][s] == b[c][s] {
                        continue;
                    }
                    let span = if s == 0 {
                        [next[c][0], b[c][0]]
                    } else {
                        [b[c][1], next[c][1]]
                    };
                    let region = if c == 0 {
                        [span, next[1]]
                    } else {
                        [b[0], span]
                    };
                    match self.strip(region, cell, origin, watch) {
                        Ok(sums) => strips[c][s] = Some(sums),
                        Err(stop) => break 'grow stop,
                    }
                }
            }
            let added = strips
                .iter()
                .flatten()
                .flatten()
                .fold(Sums::default(), |a, s| a.plus(*s));
            let total = totals.last().copied().unwrap_or_default().plus(added);
            outside += added.mass();
            let now = total.judged(origin);
            for c in 0..2 {
                for s in 0..2 {
                    let Some(strip) = strips[c][s] else { continue };
                    strip_masses[c][s] = [strip_masses[c][s][1], strip.mass()];
                    let moves = largest(changes(total.minus(strip).judged(origin), now));
                    if strip.mass() <= NEGLIGIBLE_STRIP * outside && moves <= 0.1 * MOMENT_TOLERANCE
                    {
                        open[c][s] = false;
                    }
                }
            }
            b = next;
            totals.push(total);
            boxes.push(b);
            judged.push(now);
            // Settled moments end the growth once every side still growing thins out, so
            // that what lies beyond can be extrapolated.
            let thinning = (0..4).all(|i| {
                let [before, last] = strip_masses[i / 2][i % 2];
                !open[i / 2][i % 2] || last / before < 1.0
            });
            if thinning && settled(&judged) {
                break Growth::Settled;
            }
        };
        let k = boxes.len() - 1;
        if k == 0 {
            return Beyond {
                growth,
                ..Beyond::unknown(self.bounds)
            };
        }
        // What lies beyond the last box: a side still growing whose strips thin out
        // geometrically (ratio r < 1) adds m·r/(1 − r) after its last strip's mass m; one whose
        // strips do not, or that still mattered at ±MAX_EXTENT, is unknown, and the estimate a
        // lower bound.
        let mut tail = 0.0;
        let mut at_least = matches!(growth, Growth::NotFinite { .. });
        for c in 0..2 {
            for s in 0..2 {
                let [before, last] = strip_masses[c][s];
                at_least |= stuck[c][s];
                if !open[c][s] || last == 0.0 {
                    continue;
                }
                let r = last / before;
                if r < 1.0 {
                    tail += last * r / (1.0 - r);
                } else {
                    at_least = true;
                }
            }
        }
        let whole = outside + tail;
        let share = |m: f64| {
            if whole.is_finite() {
                m / (1.0 + whole)
            } else {
                1.0
            }
        };
        let settled = growth == Growth::Settled || settled(&judged);
        let box_suffices = largest(changes(judged[0], judged[k])) <= 0.1 * MOMENT_TOLERANCE;
        let (moment_box, added) = if box_suffices {
            (self.bounds, Sums::default())
        } else {
            (boxes[k], totals[k].minus(totals[0]))
        };
        // The moment that moved most between the largest box and the largest one at most half
        // as wide (along some axis; the last growth may have been cut short at ±MAX_EXTENT).
        let unsettled = (!settled).then(|| {
            let width = |b: [[f64; 2]; 2], c: usize| b[c][1] - b[c][0];
            let j = (0..k)
                .rev()
                .find(|&j| (0..2).any(|c| width(boxes[j], c) <= 0.5 * width(boxes[k], c)))
                .unwrap_or(0);
            let moved = changes(judged[j], judged[k]);
            let i = (0..4)
                .max_by(|&a, &b| moved[a].total_cmp(&moved[b]))
                .unwrap_or(0);
            Unsettled {
                moment: Moment::JUDGED[i],
                values: [judged[j][i], judged[k][i]],
                boxes: [boxes[j], boxes[k]],
            }
        });
        Beyond {
            outside_mass: share(whole),
            at_least,
            moment_box,
            moment_box_outside: share(whole - added.mass()),
            growth,
            unsettled,
            added,
        }
    }

    /// The sums of exp(−U)/Z_box over `region` (θ₁ range, θ₂ range) on cells about `cell`
    /// wide, refined as a scan is; a NaN of U counts as no density (U's domain may end far
    /// from the box, where no chain goes). Err: why the growth stops there.
    fn strip(
        &self,
        region: [[f64; 2]; 2],
        cell: [f64; 2],
        origin: [f64; 2],
        watch: &mut Watch,
    ) -> Result<Sums, Growth> {
        let cells = |c: usize| ((region[c][1] - region[c][0]) / cell[c]).round().max(1.0) as u32;
        let grid = Grid2::new(region[0], region[1], cells(0), cells(1));
        // exp(shift − U) with shift = −log Z_box is exp(−U)/Z_box.
        let pass = self.pass(&grid, -self.log_normaliser, SCAN_LEAVES, watch, false);
        if !pass.complete {
            return Err(Growth::WorkLimit);
        }
        if pass.lowest == f64::NEG_INFINITY || pass.masses.iter().any(|m| !m.is_finite()) {
            return Err(Growth::NotFinite { at: pass.lowest_at });
        }
        Ok(Sums::of_cells(&grid, &pass.masses, 1.0, origin))
    }
}
