//! The order units go in, worked out only as far as a rule walks it. The value strategy ranks
//! every unit of its context every call, and eviction then takes one or two of them: a heap
//! built in linear time and popped a few times costs a fraction of sorting them all, and gives
//! the same order.

use super::super::engine::ops::Members;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Units (with their item indices), first to go first.
pub(crate) struct Ranked {
    units: Vec<(u32, Members)>,
    /// The units not ordered yet, least key first; empty when `units` came in order.
    rest: BinaryHeap<Reverse<Key>>,
    /// Positions in `units`, in order, as far as ordered.
    ordered: Vec<usize>,
    /// Where [`Iterator::next`] is.
    next: usize,
}

/// A unit's key and its position: positions are distinct, so this is a total order, and the
/// same as sorting (key, position) pairs.
#[derive(Clone, Copy)]
struct Key(f32, usize);

impl Ord for Key {
    fn cmp(&self, other: &Key) -> Ordering {
        self.0.total_cmp(&other.0).then(self.1.cmp(&other.1))
    }
}

impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Key) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Key {
    fn eq(&self, other: &Key) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Key {}

impl Ranked {
    /// Units already in the order they go.
    pub(crate) fn in_order(units: Vec<(u32, Members)>) -> Ranked {
        Ranked {
            ordered: (0..units.len()).collect(),
            units,
            rest: BinaryHeap::new(),
            next: 0,
        }
    }

    /// Units going least `keys[i]` first (by `f32::total_cmp`), ties in the order given.
    pub(crate) fn by_key(units: Vec<(u32, Members)>, keys: &[f32]) -> Ranked {
        debug_assert_eq!(units.len(), keys.len());
        let rest: Vec<Reverse<Key>> = keys
            .iter()
            .enumerate()
            .map(|(pos, &k)| Reverse(Key(k, pos)))
            .collect();
        Ranked {
            ordered: Vec::with_capacity(4),
            units,
            rest: BinaryHeap::from(rest),
            next: 0,
        }
    }

    /// The `k`-th unit to go (from 0), ordering as far as needed.
    pub(crate) fn unit(&mut self, k: usize) -> Option<(u32, Members)> {
        while self.ordered.len() <= k {
            let Reverse(Key(_, pos)) = self.rest.pop()?;
            self.ordered.push(pos);
        }
        self.units.get(self.ordered[k]).cloned()
    }
}

impl Iterator for Ranked {
    type Item = (u32, Members);

    fn next(&mut self) -> Option<(u32, Members)> {
        let unit = self.unit(self.next)?;
        self.next += 1;
        Some(unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_order_is_a_stable_sort_by_key() {
        let keys = [0.5, f32::NAN, 0.1, 0.5, -0.0, 0.0, 0.1, f32::INFINITY, 0.3];
        let units: Vec<(u32, Members)> = (0..keys.len())
            .map(|u| (u as u32, Members::from_slice(&[u])))
            .collect();
        let mut sorted: Vec<usize> = (0..keys.len()).collect();
        sorted.sort_by(|&a, &b| keys[a].total_cmp(&keys[b]));
        let ranked: Vec<u32> = Ranked::by_key(units.clone(), &keys)
            .map(|(u, _)| u)
            .collect();
        assert_eq!(ranked, sorted.iter().map(|&p| p as u32).collect::<Vec<_>>());
        // Asking for a later unit first, then earlier ones, gives the same units.
        let mut r = Ranked::by_key(units.clone(), &keys);
        assert_eq!(r.unit(3).map(|u| u.0), Some(sorted[3] as u32));
        assert_eq!(r.unit(0).map(|u| u.0), Some(sorted[0] as u32));
        assert_eq!(r.unit(keys.len()), None);
        let in_order: Vec<u32> = Ranked::in_order(units).map(|(u, _)| u).collect();
        assert_eq!(in_order, (0..keys.len() as u32).collect::<Vec<_>>());
    }
}
