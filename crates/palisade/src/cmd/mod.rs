//! One module per subcommand.

pub mod check;
pub mod eval;
pub mod ftw;
