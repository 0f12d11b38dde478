//! Time series of bounded length for runs of any length.

/// A series kept to at most `max` rows (plus the latest one): when it is full, every other row
/// is dropped and from then on only every other new row is kept, so the rows stay evenly
/// spaced over the whole run at a resolution that halves as the run doubles. Memory is
/// bounded however long the run; thinning a chain's draws keeps them a valid chain.
#[derive(Clone, Debug)]
pub struct BoundedSeries<T> {
    rows: Vec<T>,
    max: usize,
    /// Rows offered between two kept ones.
    stride: u64,
    /// Rows offered so far.
    offered: u64,
    /// Whether the last row is the latest one, kept off the even grid (replaced by the next).
    tail: bool,
    keep_latest: bool,
}

impl<T> BoundedSeries<T> {
    /// At most `max` evenly spaced rows plus the latest one (a plot should end at the present).
    pub fn new(max: usize) -> Self {
        Self::with(max, true)
    }

    /// At most `max` evenly spaced rows and nothing else (draws of a chain for R̂ and ESS).
    pub fn evenly_spaced(max: usize) -> Self {
        Self::with(max, false)
    }

    fn with(max: usize, keep_latest: bool) -> Self {
        Self {
            rows: Vec::new(),
            // Even, so that halving a full series leaves the next row on the coarser grid.
            max: max.max(2).next_multiple_of(2),
            stride: 1,
            offered: 0,
            tail: false,
            keep_latest,
        }
    }

    /// Offers the next row.
    pub fn push(&mut self, row: T) {
        if self.tail {
            self.rows.pop();
            self.tail = false;
        }
        let index = self.offered;
        self.offered += 1;
        if index.is_multiple_of(self.stride) {
            if self.rows.len() >= self.max {
                let mut keep = false;
                self.rows.retain(|_| {
                    keep = !keep;
                    keep
                });
                self.stride *= 2;
            }
            if index.is_multiple_of(self.stride) {
                self.rows.push(row);
                return;
            }
        }
        if self.keep_latest {
            self.rows.push(row);
            self.tail = true;
        }
    }

    /// Replaces the latest row (a row recomputed for the same step).
    pub fn replace_last(&mut self, row: T) {
        if let Some(last) = self.rows.last_mut() {
            *last = row;
        }
    }

    /// Forgets every row and starts at full resolution again.
    pub fn clear(&mut self) {
        *self = Self::with(self.max, self.keep_latest);
    }

    /// Rows offered between two kept ones now.
    pub fn stride(&self) -> u64 {
        self.stride
    }

    /// The rows as a vector.
    pub fn into_vec(self) -> Vec<T> {
        self.rows
    }
}

impl<T> std::ops::Deref for BoundedSeries<T> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        &self.rows
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_stay_evenly_spaced_over_the_whole_run() {
        let mut s = BoundedSeries::evenly_spaced(8);
        for i in 0..1000u32 {
            s.push(i);
            assert!(s.len() <= 8);
        }
        assert_eq!(s.stride(), 128);
        assert_eq!(&s[..], &[0, 128, 256, 384, 512, 640, 768, 896]);
    }

    #[test]
    fn the_latest_row_is_kept_and_replaced() {
        let mut s = BoundedSeries::new(4);
        for i in 0..11u32 {
            s.push(i);
            assert_eq!(*s.last().unwrap(), i);
            assert!(s.len() <= 5);
        }
        assert_eq!(&s[..], &[0, 4, 8, 10]);
        s.clear();
        s.push(7);
        assert_eq!(&s[..], &[7]);
    }
}
