//! The part of Python's `difflib.SequenceMatcher` (CPython `Lib/difflib.py`) that OpenHands'
//! `FileEditObservation.visualize_diff` uses, on lists of lines: `get_grouped_opcodes`. Ported
//! step by step (no `isjunk`; `autojunk` on, as the default) so that the rendered diff, which is
//! what the model read, has the same hunks and line numbers as OpenHands produced.

use std::collections::HashMap;

/// An opcode: what turns `a[i1..i2]` into `b[j1..j2]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Opcode {
    pub(crate) tag: Tag,
    pub(crate) i1: usize,
    pub(crate) i2: usize,
    pub(crate) j1: usize,
    pub(crate) j2: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tag {
    Equal,
    Replace,
    Delete,
    Insert,
}

struct Matcher<'a> {
    a: &'a [&'a str],
    b: &'a [&'a str],
    /// Positions of each line of `b`, popular lines left out (`autojunk`).
    b2j: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a [&'a str], b: &'a [&'a str]) -> Matcher<'a> {
        let mut b2j: HashMap<&str, Vec<usize>> = HashMap::new();
        for (j, line) in b.iter().enumerate() {
            b2j.entry(line).or_default().push(j);
        }
        // `autojunk`: in a sequence of 200 or more, an element seen more than 1% + 1 times is
        // "popular" and not used to seed matches (it may still extend one).
        if b.len() >= 200 {
            let limit = b.len() / 100 + 1;
            b2j.retain(|_, positions| positions.len() <= limit);
        }
        Matcher { a, b, b2j }
    }

    /// `find_longest_match`: the longest matching block in `a[alo..ahi]` and `b[blo..bhi]`, the
    /// earliest in `a` (then in `b`) among the longest; `(i, j, size)`.
    fn longest_match(
        &self,
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for i in alo..ahi {
            let mut next: HashMap<usize, usize> = HashMap::new();
            for &j in self
                .b2j
                .get(self.a[i])
                .map(Vec::as_slice)
                .unwrap_or_default()
            {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j
                    .checked_sub(1)
                    .and_then(|p| j2len.get(&p))
                    .copied()
                    .unwrap_or(0)
                    + 1;
                next.insert(j, k);
                if k > bestsize {
                    (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                }
            }
            j2len = next;
        }
        // Extend with equal lines on both sides (popular lines included: they are not junk).
        while besti > alo && bestj > blo && self.a[besti - 1] == self.b[bestj - 1] {
            (besti, bestj, bestsize) = (besti - 1, bestj - 1, bestsize + 1);
        }
        while besti + bestsize < ahi
            && bestj + bestsize < bhi
            && self.a[besti + bestsize] == self.b[bestj + bestsize]
        {
            bestsize += 1;
        }
        (besti, bestj, bestsize)
    }

    /// `get_matching_blocks`, adjacent blocks collapsed, ending with `(len a, len b, 0)`.
    fn matching_blocks(&self) -> Vec<(usize, usize, usize)> {
        let mut queue = vec![(0, self.a.len(), 0, self.b.len())];
        let mut blocks = Vec::new();
        while let Some((alo, ahi, blo, bhi)) = queue.pop() {
            let (i, j, k) = self.longest_match(alo, ahi, blo, bhi);
            if k > 0 {
                blocks.push((i, j, k));
                if alo < i && blo < j {
                    queue.push((alo, i, blo, j));
                }
                if i + k < ahi && j + k < bhi {
                    queue.push((i + k, ahi, j + k, bhi));
                }
            }
        }
        blocks.sort_unstable();
        let mut collapsed: Vec<(usize, usize, usize)> = Vec::new();
        let (mut i1, mut j1, mut k1) = (0, 0, 0);
        for (i2, j2, k2) in blocks {
            if i1 + k1 == i2 && j1 + k1 == j2 {
                k1 += k2;
            } else {
                if k1 > 0 {
                    collapsed.push((i1, j1, k1));
                }
                (i1, j1, k1) = (i2, j2, k2);
            }
        }
        if k1 > 0 {
            collapsed.push((i1, j1, k1));
        }
        collapsed.push((self.a.len(), self.b.len(), 0));
        collapsed
    }

    fn opcodes(&self) -> Vec<Opcode> {
        let (mut i, mut j) = (0, 0);
        let mut out = Vec::new();
        for (ai, bj, size) in self.matching_blocks() {
            let tag = match (i < ai, j < bj) {
                (true, true) => Some(Tag::Replace),
                (true, false) => Some(Tag::Delete),
                (false, true) => Some(Tag::Insert),
                (false, false) => None,
            };
            if let Some(tag) = tag {
                out.push(Opcode {
                    tag,
                    i1: i,
                    i2: ai,
                    j1: j,
                    j2: bj,
                });
            }
            (i, j) = (ai + size, bj + size);
            if size > 0 {
                out.push(Opcode {
                    tag: Tag::Equal,
                    i1: ai,
                    i2: i,
                    j1: bj,
                    j2: j,
                });
            }
        }
        out
    }
}

/// `SequenceMatcher(None, a, b).get_grouped_opcodes(n)`: the changes in hunks with up to `n`
/// lines of context.
pub(crate) fn grouped_opcodes(a: &[&str], b: &[&str], n: usize) -> Vec<Vec<Opcode>> {
    let mut codes = Matcher::new(a, b).opcodes();
    if codes.is_empty() {
        codes.push(Opcode {
            tag: Tag::Equal,
            i1: 0,
            i2: 1,
            j1: 0,
            j2: 1,
        });
    }
    // Leading and trailing runs of equal lines keep only `n` lines of context.
    if let Some(first) = codes.first_mut().filter(|c| c.tag == Tag::Equal) {
        first.i1 = first.i1.max(first.i2.saturating_sub(n));
        first.j1 = first.j1.max(first.j2.saturating_sub(n));
    }
    if let Some(last) = codes.last_mut().filter(|c| c.tag == Tag::Equal) {
        last.i2 = last.i2.min(last.i1 + n);
        last.j2 = last.j2.min(last.j1 + n);
    }
    let mut groups = Vec::new();
    let mut group = Vec::new();
    for mut code in codes {
        // A long run of equal lines ends one hunk and starts the next.
        if code.tag == Tag::Equal && code.i2 - code.i1 > 2 * n {
            group.push(Opcode {
                i2: code.i2.min(code.i1 + n),
                j2: code.j2.min(code.j1 + n),
                ..code
            });
            groups.push(std::mem::take(&mut group));
            code.i1 = code.i1.max(code.i2.saturating_sub(n));
            code.j1 = code.j1.max(code.j2.saturating_sub(n));
        }
        group.push(code);
    }
    let only_equal = group.len() == 1 && group[0].tag == Tag::Equal;
    if !group.is_empty() && !only_equal {
        groups.push(group);
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    type Code = (Tag, usize, usize, usize, usize);

    fn tags(groups: &[Vec<Opcode>]) -> Vec<Vec<Code>> {
        groups
            .iter()
            .map(|g| g.iter().map(|c| (c.tag, c.i1, c.i2, c.j1, c.j2)).collect())
            .collect()
    }

    #[test]
    fn matches_python_difflib() {
        // Expected values from CPython 3.11:
        // list(SequenceMatcher(None, a, b).get_grouped_opcodes(2))
        let a: Vec<&str> = "1 2 3 4 5 6 7 8 9 10".split(' ').collect();
        let b: Vec<&str> = "1 2 x 4 5 6 7 8 9 y 10".split(' ').collect();
        use Tag::*;
        assert_eq!(
            tags(&grouped_opcodes(&a, &b, 2)),
            [
                vec![
                    (Equal, 0, 2, 0, 2),
                    (Replace, 2, 3, 2, 3),
                    (Equal, 3, 5, 3, 5)
                ],
                vec![
                    (Equal, 7, 9, 7, 9),
                    (Insert, 9, 9, 9, 10),
                    (Equal, 9, 10, 10, 11)
                ],
            ]
        );
        let same = ["a", "b"];
        assert!(grouped_opcodes(&same, &same, 2).is_empty());
        assert_eq!(
            tags(&grouped_opcodes(&[], &["a"], 2)),
            [vec![(Insert, 0, 0, 0, 1)]]
        );
    }
}
