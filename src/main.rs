//! The `mosaic` command line.

fn main() {}
