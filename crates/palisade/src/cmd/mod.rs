//! One module per subcommand.

pub mod analyze;
pub mod bench;
pub mod check;
pub mod demo;
pub mod eval;
pub mod ftw;
pub mod reload;
pub mod serve;
pub mod traffic;
