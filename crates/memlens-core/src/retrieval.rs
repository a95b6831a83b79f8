//! Incremental BM25 over documents (chunks): add a document at any time, score a query against all
//! documents so far. Used by offload + retrieval, task relevance and the evidence benchmark.

use crate::text::terms;
use foldhash::HashMap;

/// BM25 parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f32,
    /// Length normalization.
    pub b: f32,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.2, b: 0.75 }
    }
}

/// An incremental BM25 index. Document ids are the order of [`Bm25Index::add`] calls (0, 1, ...).
#[derive(Debug, Clone, Default)]
pub struct Bm25Index {
    params: Bm25Params,
    /// term -> postings (doc, term frequency), docs ascending.
    postings: HashMap<String, Vec<(u32, u32)>>,
    doc_len: Vec<u32>,
    total_len: u64,
}

impl Bm25Index {
    /// An empty index with default parameters.
    pub fn new() -> Bm25Index {
        Bm25Index::default()
    }

    /// An empty index with these parameters.
    pub fn with_params(params: Bm25Params) -> Bm25Index {
        Bm25Index {
            params,
            ..Bm25Index::default()
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    /// True when no document was added.
    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// Adds a document and returns its id.
    pub fn add(&mut self, text: &str) -> u32 {
        self.add_terms(terms(text))
    }

    /// Adds a document already analyzed into its index terms ([`terms`]) and returns its id.
    pub fn add_terms(&mut self, mut terms: Vec<String>) -> u32 {
        let id = self.doc_len.len() as u32;
        let len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        // Term frequencies by sorting: no map per document.
        terms.sort_unstable();
        let mut run = terms.into_iter().peekable();
        while let Some(term) = run.next() {
            let mut n = 1u32;
            while run.next_if_eq(&term).is_some() {
                n += 1;
            }
            match self.postings.get_mut(&term) {
                Some(list) => list.push((id, n)),
                None => {
                    self.postings.insert(term, vec![(id, n)]);
                }
            }
        }
        self.doc_len.push(len);
        self.total_len += u64::from(len);
        id
    }

    /// Inverse document frequency of an analyzed term (BM25+ style, never negative).
    pub fn idf(&self, term: &str) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = self.postings.get(term).map_or(0, Vec::len) as f32;
        ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
    }

    /// BM25 scores of every document with a positive score for `query`, as a dense vector
    /// indexed by document id (zeros for documents sharing no term).
    pub fn scores(&self, query: &str) -> Vec<f32> {
        let mut out = vec![0.0f32; self.doc_len.len()];
        if self.doc_len.is_empty() {
            return out;
        }
        for (term, postings) in self.query_postings(query) {
            let idf = self.idf(term);
            for &(doc, tf) in postings {
                out[doc as usize] += self.term_score(idf, tf, doc);
            }
        }
        out
    }

    /// BM25 scores of the given documents only (same values as [`Bm25Index::scores`] at those
    /// positions): cost follows the candidates and the query, not the size of the index, which is
    /// what a live engine scoring its context every turn needs.
    pub fn scores_for(&self, query: &str, docs: &[u32]) -> Vec<f32> {
        let mut out = vec![0.0f32; docs.len()];
        if self.doc_len.is_empty() || docs.is_empty() {
            return out;
        }
        // Merge-join each term's postings (ascending doc ids) with the candidates sorted by doc:
        // the cost follows the candidates and the postings from the oldest candidate on, not the
        // whole history.
        let mut order: Vec<(u32, usize)> = docs.iter().enumerate().map(|(s, &d)| (d, s)).collect();
        order.sort_unstable();
        let first = order[0].0;
        for (term, postings) in self.query_postings(query) {
            let idf = self.idf(term);
            let mut p = postings.partition_point(|&(d, _)| d < first);
            for &(doc, slot) in &order {
                p = gallop(postings, p, doc);
                if p == postings.len() {
                    break;
                }
                if postings[p].0 == doc {
                    out[slot] += self.term_score(idf, postings[p].1, doc);
                }
            }
        }
        out
    }

    /// The distinct analyzed terms of a query that occur in the index, with their postings.
    fn query_postings<'a>(&'a self, query: &str) -> Vec<(&'a str, &'a [(u32, u32)])> {
        let mut qterms = terms(query);
        qterms.sort();
        qterms.dedup();
        qterms
            .iter()
            .filter_map(|t| self.postings.get_key_value(t.as_str()))
            .map(|(t, p)| (t.as_str(), p.as_slice()))
            .collect()
    }

    /// One term's BM25 contribution to a document.
    fn term_score(&self, idf: f32, tf: u32, doc: u32) -> f32 {
        let Bm25Params { k1, b } = self.params;
        let avg = self.total_len as f32 / self.doc_len.len().max(1) as f32;
        let len = self.doc_len.get(doc as usize).copied().unwrap_or(0) as f32;
        let tf = tf as f32;
        let norm = k1 * (1.0 - b + b * len / avg.max(1e-6));
        idf * tf * (k1 + 1.0) / (tf + norm)
    }

    /// The `k` best documents for `query`, best first; ties broken by the lower id.
    pub fn top(&self, query: &str, k: usize) -> Vec<(u32, f32)> {
        let mut scored: Vec<(u32, f32)> = self
            .scores(query)
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .map(|(i, s)| (i as u32, s))
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(k);
        scored
    }
}

/// The first position at or after `from` whose document is not below `doc`: a galloping
/// search, so walking a common term's postings to the candidates costs the log of the gaps, not
/// every posting since the oldest candidate (a live context keeps its system prompt, the
/// first document).
fn gallop(postings: &[(u32, u32)], from: usize, doc: u32) -> usize {
    if postings.get(from).is_none_or(|&(d, _)| d >= doc) {
        return from;
    }
    // postings[lo] < doc throughout; stop when postings[hi] >= doc or past the end.
    let (mut lo, mut step) = (from, 1);
    let mut hi = from + 1;
    while hi < postings.len() && postings[hi].0 < doc {
        lo = hi;
        step *= 2;
        hi = lo + step;
    }
    let hi = hi.min(postings.len());
    lo + 1 + postings[lo + 1..hi].partition_point(|&(d, _)| d < doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_the_matching_document_first() {
        let mut ix = Bm25Index::new();
        ix.add("I adopted a cat named Pixel last week");
        ix.add("The weather in Lisbon is sunny");
        ix.add("Pixel sleeps on my keyboard; the cat is grey");
        let top = ix.top("What is the name of the cat?", 3);
        assert_eq!(top.len(), 2);
        assert!(top.iter().all(|(d, _)| *d != 1));
        assert!(ix.top("Lisbon weather", 1)[0].0 == 1);
        assert!(ix.top("zebra", 5).is_empty());
    }

    #[test]
    fn incremental_adds_match_a_rebuild() {
        let docs = ["alpha beta", "beta gamma gamma", "delta"];
        let mut a = Bm25Index::new();
        for d in docs {
            a.add(d);
        }
        let mut b = Bm25Index::new();
        b.add(docs[0]);
        let _ = b.scores("gamma");
        b.add(docs[1]);
        b.add(docs[2]);
        assert_eq!(a.scores("gamma beta"), b.scores("gamma beta"));
    }

    #[test]
    fn gallop_finds_the_first_posting_not_below() {
        let postings: Vec<(u32, u32)> = (0..100).map(|d| (d * 3, 1)).collect();
        for from in [0, 1, 7, 50, 99, 100] {
            for doc in 0..310 {
                let linear = from + postings[from..].partition_point(|&(d, _)| d < doc);
                assert_eq!(
                    gallop(&postings, from, doc),
                    linear,
                    "from {from}, doc {doc}"
                );
            }
        }
        assert_eq!(gallop(&[], 0, 5), 0);
    }

    #[test]
    fn scores_for_matches_dense_scores() {
        let mut ix = Bm25Index::new();
        for d in [
            "red apple pie",
            "green apple",
            "blue sky",
            "apple apple tree",
        ] {
            ix.add(d);
        }
        let dense = ix.scores("apple sky");
        let sparse = ix.scores_for("apple sky", &[3, 0, 2, 9]);
        assert_eq!(sparse, vec![dense[3], dense[0], dense[2], 0.0]);
    }
}
