//! The MemLens web analyzer page.

fn main() {
    memlens_web::app::run();
}
