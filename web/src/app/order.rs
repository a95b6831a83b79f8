//! Sorting for the views, through one instantiation of the standard library's sort.

/// The order of `0..n` sorted by `cmp`, stably. Every sort on the page goes through this one
/// instantiation of the standard library's sort: each `sort_by` with a closure of its own is
/// another ~4 KB of the page's code (BENCHMARKS.md, "Web app").
pub fn sorted_order(n: usize, cmp: &dyn Fn(usize, usize) -> std::cmp::Ordering) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b));
    order
}

/// `items` in [`sorted_order`] by `cmp`.
pub fn sorted<T>(items: Vec<T>, cmp: &dyn Fn(&T, &T) -> std::cmp::Ordering) -> Vec<T> {
    let order = sorted_order(items.len(), &|a, b| cmp(&items[a], &items[b]));
    let mut slots: Vec<Option<T>> = items.into_iter().map(Some).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably() {
        let items = vec![(2, 'a'), (1, 'b'), (2, 'c'), (0, 'd'), (1, 'e')];
        let got = sorted(items, &|x, y| x.0.cmp(&y.0));
        assert_eq!(got, [(0, 'd'), (1, 'b'), (1, 'e'), (2, 'a'), (2, 'c')]);
        assert_eq!(sorted_order(3, &|a, b| b.cmp(&a)), [2, 1, 0]);
        assert!(sorted(Vec::<u8>::new(), &|x, y| x.cmp(y)).is_empty());
    }
}
