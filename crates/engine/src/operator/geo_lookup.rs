//! `@geoLookup`: looks the input address up in the GeoIP database and fills the `GEO`
//! collection.
//!
//! Not available in Palisade: without `SecGeoLookupDb` there is no database (as in
//! ModSecurity, where the rule then fails), and with one Palisade still has no MaxMind
//! database reader built in. Building the operator therefore always reports
//! [`OperatorError::Unsupported`] with the reason.

use super::{OperatorEnv, OperatorError};

/// The error reported for `@geoLookup`.
pub(crate) fn unsupported(env: &OperatorEnv) -> OperatorError {
    match &env.geo_db {
        None => OperatorError::Unsupported(
            "@geoLookup needs a GeoIP database, and no SecGeoLookupDb is configured".to_string(),
        ),
        Some(path) => OperatorError::Unsupported(format!(
            "@geoLookup: MaxMind database lookup is not built into Palisade (SecGeoLookupDb \
             `{}` is configured but cannot be read)",
            path.display()
        )),
    }
}
