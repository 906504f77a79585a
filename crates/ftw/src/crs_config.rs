//! The configuration CRS's regression suite expects around the rules
//! (`tests/regression/README.md`): a base like ModSecurity's recommended settings
//! (body access, the XML and JSON body processors chosen by Content-Type, body-parsing
//! failures flagged), `crs-setup.conf.example`, rule 900005 (DetectionOnly, blocking
//! paranoia level 4, the test limits), then `rules/*.conf`.

use std::path::{Path, PathBuf};

/// Palisade's base settings for running CRS, in the spirit of ModSecurity's
/// recommended configuration (ids in Palisade's own 1000000 range).
pub const BASE_CONF: &str = r#"
SecRuleEngine On
SecRequestBodyAccess On
SecRule REQUEST_HEADERS:Content-Type "@rx ^(?:application(?:/soap\+|/)|text/)xml" "id:1000000,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=XML"
SecRule REQUEST_HEADERS:Content-Type "@rx ^application/json" "id:1000001,phase:1,t:none,t:lowercase,pass,nolog,ctl:requestBodyProcessor=JSON"
SecRequestBodyLimit 13107200
SecRequestBodyNoFilesLimit 131072
SecRequestBodyLimitAction Reject
SecRequestBodyJsonDepthLimit 512
SecArgumentsLimit 1000
SecRule &ARGS "@ge 1000" "id:1000005,phase:2,t:none,log,deny,status:400,msg:'Too many arguments: the limit of 1000 was reached',severity:2"
SecRule REQBODY_ERROR "!@eq 0" "id:1000002,phase:2,t:none,log,deny,status:400,msg:'Request body could not be parsed: %{reqbody_error_msg}',severity:2"
SecRule MULTIPART_STRICT_ERROR "!@eq 0" "id:1000003,phase:2,t:none,log,deny,status:400,msg:'Multipart request body failed strict validation'"
SecRule MULTIPART_UNMATCHED_BOUNDARY "@eq 1" "id:1000004,phase:2,t:none,log,deny,msg:'Multipart parser saw a possible unmatched boundary'"
SecPcreMatchLimit 1000
SecPcreMatchLimitRecursion 1000
SecResponseBodyAccess On
SecResponseBodyMimeType text/plain text/html text/xml
SecResponseBodyLimit 524288
SecResponseBodyLimitAction ProcessPartial
SecAuditEngine RelevantOnly
SecAuditLogRelevantStatus "^(?:5|40[0-35-9]|4[1-9])"
SecArgumentSeparator &
SecCookieFormat 0
"#;

/// Rule 900005 from the CRS regression README, as the suite requires.
pub const TEST_SETUP_RULE: &str = r#"
SecAction "id:900005,phase:1,nolog,pass,ctl:ruleEngine=DetectionOnly,ctl:ruleRemoveById=910000,setvar:tx.blocking_paranoia_level=4,setvar:tx.crs_validate_utf8_encoding=1,setvar:tx.arg_name_length=100,setvar:tx.arg_length=400,setvar:tx.total_arg_length=64000,setvar:tx.max_num_args=255,setvar:tx.max_file_size=64100,setvar:tx.combined_file_sizes=65535"
"#;

/// The files of a CRS tree, in load order: setup, then the rules sorted by name.
pub fn crs_files(crs_dir: &Path) -> std::io::Result<(PathBuf, Vec<PathBuf>)> {
    let setup = crs_dir.join("crs-setup.conf.example");
    let mut rules: Vec<PathBuf> = std::fs::read_dir(crs_dir.join("rules"))?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "conf"))
        .collect();
    rules.sort();
    Ok((setup, rules))
}

/// The whole test configuration as one text with `Include`s of the CRS files.
pub fn test_config(crs_dir: &Path) -> std::io::Result<String> {
    let (setup, rules) = crs_files(crs_dir)?;
    let mut text = String::from(BASE_CONF);
    text.push_str(&format!("Include \"{}\"\n", setup.display()));
    text.push_str(TEST_SETUP_RULE);
    for r in rules {
        text.push_str(&format!("Include \"{}\"\n", r.display()));
    }
    Ok(text)
}

/// A production-like CRS configuration: the base settings, `crs-setup.conf.example`,
/// the blocking paranoia level, then the rules. The engine is On unless
/// `detection_only`.
pub fn crs_config(crs_dir: &Path, paranoia: u8, detection_only: bool) -> std::io::Result<String> {
    let (setup, rules) = crs_files(crs_dir)?;
    let mut text = String::from(BASE_CONF);
    if detection_only {
        text.push_str("SecRuleEngine DetectionOnly\n");
    }
    text.push_str(&format!("Include \"{}\"\n", setup.display()));
    text.push_str(&format!(
        "SecAction \"id:900000,phase:1,pass,t:none,nolog,setvar:tx.blocking_paranoia_level={}\"\n",
        paranoia.clamp(1, 4)
    ));
    for r in rules {
        text.push_str(&format!("Include \"{}\"\n", r.display()));
    }
    Ok(text)
}
