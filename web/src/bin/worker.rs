//! The MemLens worker: imports, analysis and replays off the page's thread.

fn main() {
    memlens_web::worker::run();
}
