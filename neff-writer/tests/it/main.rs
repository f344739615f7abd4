//! neff-writer's integration tests, one binary.

mod builder;
mod packager;
