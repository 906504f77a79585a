//! One module per subcommand.

pub mod bench;
pub mod check;
pub mod eval;
pub mod ftw;
