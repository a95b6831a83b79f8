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
        self.idf_of_df(self.postings.get(term).map_or(0, Vec::len))
    }

    /// [`Bm25Index::idf`] of a term found in `df` documents.
    fn idf_of_df(&self, df: usize) -> f32 {
        let n = self.doc_len.len() as f32;
        let df = df as f32;
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

    /// [`Bm25Index::scores_for`] with the query's matches kept in `cache` while the query stays
    /// the same: the same scores, bit for bit. A live engine scores one query (the newest user
    /// message) against nearly the same documents turn after turn, and a document's postings
    /// never change once it is added; only what every add changes (the number of documents,
    /// document frequencies, the average length) is read anew. So a turn finds the matches of the
    /// documents it has not scored for this query yet (usually the one just added) and sums the
    /// rest from the cache, instead of searching every query term's postings for every document.
    pub fn scores_for_cached(&self, cache: &mut QueryCache, query: &str, docs: &[u32]) -> Vec<f32> {
        let mut out = vec![0.0f32; docs.len()];
        if self.doc_len.is_empty() || docs.is_empty() {
            return out;
        }
        cache.start(query, self.doc_len.len());
        // Postings per query term (`None`: not in the index yet; it may be later, and then only
        // documents added after this one can hold it).
        let postings: Vec<Option<&[(u32, u32)]>> = cache
            .terms
            .iter()
            .map(|t| self.postings.get(t.as_str()).map(Vec::as_slice))
            .collect();
        cache.fill(docs, &postings);
        let idf: Vec<f32> = postings
            .iter()
            .map(|p| self.idf_of_df(p.map_or(0, <[_]>::len)))
            .collect();
        let avg = self.avg_len();
        for (slot, &doc) in docs.iter().enumerate() {
            let matches = cache.matches_of(doc);
            if matches.is_empty() {
                continue;
            }
            // The document's length norm once, not per term: the same value `term_score` finds.
            let norm = self.norm(doc, avg);
            // Summed in term order, as `scores_for` adds each term's share in turn.
            for &(term, tf) in matches {
                out[slot] += share(idf[term as usize], tf, norm, self.params.k1);
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
        share(idf, tf, self.norm(doc, self.avg_len()), self.params.k1)
    }

    /// The average document length.
    fn avg_len(&self) -> f32 {
        self.total_len as f32 / self.doc_len.len().max(1) as f32
    }

    /// A document's length normalization, `k1 · (1 - b + b · len / avg)`.
    fn norm(&self, doc: u32, avg: f32) -> f32 {
        let Bm25Params { k1, b } = self.params;
        let len = self.doc_len.get(doc as usize).copied().unwrap_or(0) as f32;
        k1 * (1.0 - b + b * len / avg.max(1e-6))
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

/// One term's BM25 share given the document's length norm ([`Bm25Index::norm`]).
fn share(idf: f32, tf: u32, norm: f32, k1: f32) -> f32 {
    let tf = tf as f32;
    idf * tf * (k1 + 1.0) / (tf + norm)
}

/// One query's matches (term, frequency) per document scored for it so far: see
/// [`Bm25Index::scores_for_cached`]. Reset when the query changes; one per index.
#[derive(Debug, Clone, Default)]
pub struct QueryCache {
    query: Option<String>,
    /// The query's distinct analyzed terms, sorted (the order `scores_for` sums them in).
    terms: Vec<String>,
    /// Per document: `(generation, start, len)` of its matches in `matches`; computed for this
    /// query when the generation is the current one.
    spans: Vec<(u32, u32, u32)>,
    generation: u32,
    /// `(term index, term frequency)`, each document's in term order.
    matches: Vec<(u32, u32)>,
}

impl QueryCache {
    /// Keeps the cache for `query`, or resets it for a new one; sized for `docs` documents.
    fn start(&mut self, query: &str, docs: usize) {
        if self.query.as_deref() != Some(query) {
            let mut terms = terms(query);
            terms.sort();
            terms.dedup();
            self.terms = terms;
            self.query = Some(query.to_string());
            self.matches.clear();
            self.generation = self.generation.wrapping_add(1);
            if self.generation == 0 {
                // Wrapped: no span may look current by chance.
                self.spans.iter_mut().for_each(|s| s.0 = 0);
                self.generation = 1;
            }
        }
        if self.spans.len() < docs {
            self.spans.resize(docs, (0, 0, 0));
        }
    }

    /// Finds the matches of the documents in `docs` not yet scored for this query: each term's
    /// postings merge-joined with them (ascending), as `scores_for` does.
    fn fill(&mut self, docs: &[u32], postings: &[Option<&[(u32, u32)]>]) {
        let generation = self.generation;
        let spans = &self.spans;
        let mut new: Vec<u32> = docs
            .iter()
            .copied()
            .filter(|&d| spans.get(d as usize).is_some_and(|s| s.0 != generation))
            .collect();
        if new.is_empty() {
            return;
        }
        new.sort_unstable();
        new.dedup();
        let mut hits: Vec<(u32, u32, u32)> = Vec::new();
        for (term, list) in postings.iter().enumerate() {
            let Some(list) = list else { continue };
            let mut p = list.partition_point(|&(d, _)| d < new[0]);
            for &doc in &new {
                p = gallop(list, p, doc);
                if p == list.len() {
                    break;
                }
                if list[p].0 == doc {
                    hits.push((doc, term as u32, list[p].1));
                }
            }
        }
        hits.sort_unstable();
        let mut h = 0;
        for &doc in &new {
            let start = self.matches.len();
            while h < hits.len() && hits[h].0 == doc {
                self.matches.push((hits[h].1, hits[h].2));
                h += 1;
            }
            self.spans[doc as usize] = (
                generation,
                start as u32,
                (self.matches.len() - start) as u32,
            );
        }
    }

    /// A document's matches for the current query (none when it was not scored for it).
    fn matches_of(&self, doc: u32) -> &[(u32, u32)] {
        match self.spans.get(doc as usize) {
            Some(&(g, start, len)) if g == self.generation => {
                &self.matches[start as usize..(start + len) as usize]
            }
            _ => &[],
        }
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
    fn cached_scores_equal_scores_for_as_documents_arrive_and_the_query_changes() {
        let texts = [
            "red apple pie",
            "green apple",
            "blue sky over the apple tree",
            "apple apple tree",
            "sky sky sky",
            "a tree in the sky with an apple",
        ];
        let mut ix = Bm25Index::new();
        let mut cache = QueryCache::default();
        for (n, text) in texts.iter().enumerate() {
            ix.add(text);
            let all: Vec<u32> = (0..=n as u32).rev().collect();
            let some: Vec<u32> = (0..=n as u32).filter(|d| d % 2 == 0).collect();
            for query in ["apple sky", "apple sky", "tree", "zebra", "apple sky"] {
                for docs in [&all, &some] {
                    let cached = ix.scores_for_cached(&mut cache, query, docs);
                    let fresh = ix.scores_for(query, docs);
                    assert_eq!(
                        cached.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        fresh.iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
                        "{query} over {docs:?} after {} documents",
                        n + 1
                    );
                }
            }
        }
        // A document id past the index scores 0, as with `scores_for`.
        assert_eq!(ix.scores_for_cached(&mut cache, "apple", &[99]), vec![0.0]);
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
