//! `SecGeoLookupDb` and `@geoLookup` against small MaxMind databases written by the
//! test writer (`support/mmdb_writer.rs`): the writer's files read back with the
//! `maxminddb` crate, `GEO` is filled as libmodsecurity v3's MaxMind backend fills
//! it, a chained rule denies by country, addresses outside the database and
//! invalid input do not match, load errors name the file, and the rule is never
//! cached, folded or skipped.
//!
//! A Rust test rather than a case file: the database path is a generated file.

#![allow(clippy::unwrap_used)] // tests fail by panicking

#[path = "support/mmdb_writer.rs"]
mod mmdb_writer;

use std::net::IpAddr;
use std::sync::Arc;

use engine::operator::GeoDb;
use engine::rule::CompiledOp;
use engine::{Connection, Options, Program, Transaction};
use mmdb_writer::{city_record, map, names, s, TempDb, Value, Writer};

const US: (&str, &str, &str, &str, &str, f64, f64) = (
    "US",
    "United States",
    "North America",
    "Minneapolis",
    "55401",
    44.9797,
    -93.2638,
);

/// The test database: 192.0.2.0/24 US (full City record), 198.51.100.0/24 DE with
/// 198.51.100.128/25 FR nested, 203.0.113.0/24 a Country-only record (JP),
/// 100.64.0.0/10 an empty record, 2001:db8::/32 GB (IPv6 databases only).
fn database(ip_version: u16, record_size: u16) -> Vec<u8> {
    let (cc, country, continent, city, postal, lat, lon) = US;
    let mut w = Writer::new("GeoLite2-City", ip_version, record_size);
    w.insert(
        "192.0.2.0/24",
        city_record(cc, country, continent, city, postal, lat, lon),
    )
    .insert(
        "198.51.100.0/24",
        city_record(
            "DE", "Germany", "Europe", "Berlin", "10115", 52.5244, 13.4105,
        ),
    )
    .insert(
        "198.51.100.128/25",
        city_record("FR", "France", "Europe", "Paris", "75001", 48.8566, 2.3522),
    )
    .insert(
        "203.0.113.0/24",
        map([
            (
                "continent",
                map([("code", s("AS")), ("names", names("Asia"))]),
            ),
            (
                "country",
                map([("iso_code", s("JP")), ("names", names("Japan"))]),
            ),
        ]),
    )
    .insert("100.64.0.0/10", Value::Map(vec![]));
    if ip_version == 6 {
        w.insert(
            "2001:db8::/32",
            city_record(
                "GB",
                "United Kingdom",
                "Europe",
                "London",
                "EC1A",
                51.5142,
                -0.0931,
            ),
        );
    }
    w.build()
}

fn temp_db() -> TempDb {
    TempDb::new("GeoLite2-City.mmdb", &database(6, 28))
}

fn program_with(db: &TempDb, rules: &str, options: &Options) -> Arc<Program> {
    let conf = format!(
        "SecRuleEngine On\nSecGeoLookupDb {}\n{rules}",
        db.path.display()
    );
    Program::from_str_with("geo.conf", &conf, options).unwrap_or_else(|e| panic!("{e}"))
}

fn program(db: &TempDb, rules: &str) -> Arc<Program> {
    program_with(db, rules, &Options::default())
}

/// Runs phase 1 for a client (and an optional X-Forwarded-For); the status of the
/// intervention, if any, and the transaction.
fn request(program: &Arc<Program>, client: &str, xff: Option<&[u8]>) -> (Option<u16>, Transaction) {
    let conn = Connection {
        client_ip: client.into(),
        ..Connection::default()
    };
    let mut tx = Transaction::new(Arc::clone(program), &conn);
    tx.process_uri("/", "GET", "1.1");
    tx.add_request_header(b"Host", b"example.com");
    if let Some(x) = xff {
        tx.add_request_header(b"X-Forwarded-For", x);
    }
    let status = tx.process_request_headers().map(|i| i.status());
    (status, tx)
}

fn tx_str(tx: &Transaction, key: &str) -> String {
    String::from_utf8_lossy(tx.tx(key).unwrap_or_default()).into_owned()
}

/// Copies every GEO key into TX (`tx.geo_*`) so tests can read them.
const COPY_GEO: &str = "SecAction \"id:900,phase:1,pass,nolog,\
    setvar:tx.geo_country_code=%{geo.country_code},\
    setvar:tx.geo_country_code3=%{geo.country_code3},\
    setvar:tx.geo_country_name=%{GEO.COUNTRY_NAME},\
    setvar:tx.geo_country_continent=%{geo.country_continent},\
    setvar:tx.geo_region=%{geo.region},\
    setvar:tx.geo_city=%{geo.city},\
    setvar:tx.geo_postal_code=%{geo.postal_code},\
    setvar:tx.geo_latitude=%{geo.latitude},\
    setvar:tx.geo_longitude=%{geo.longitude}\"\n";

#[test]
fn writer_output_reads_back_with_maxminddb_in_every_layout() {
    for ip_version in [4u16, 6] {
        for record_size in [24u16, 28, 32] {
            let what = format!("IPv{ip_version}, {record_size}-bit records");
            let reader = maxminddb::Reader::from_source(database(ip_version, record_size))
                .unwrap_or_else(|e| panic!("{what}: {e}"));
            reader.verify().unwrap_or_else(|e| panic!("{what}: {e}"));
            let m = reader.metadata();
            assert_eq!(
                (m.ip_version, m.record_size, m.database_type.as_str()),
                (ip_version, record_size, "GeoLite2-City"),
                "{what}"
            );
            let city = |ip: &str| {
                let ip: IpAddr = ip.parse().unwrap();
                let found = reader.lookup(ip).unwrap();
                found.decode::<maxminddb::geoip2::City>().unwrap().map(|c| {
                    (
                        c.country.iso_code.map(str::to_string),
                        c.city.names.english.map(str::to_string),
                        c.location.latitude,
                    )
                })
            };
            assert_eq!(
                city("192.0.2.7"),
                Some((Some("US".into()), Some("Minneapolis".into()), Some(44.9797))),
                "{what}"
            );
            assert_eq!(
                city("198.51.100.5").unwrap().0.as_deref(),
                Some("DE"),
                "{what}"
            );
            assert_eq!(
                city("198.51.100.200").unwrap().0.as_deref(),
                Some("FR"),
                "{what}"
            );
            assert_eq!(city("203.0.113.1").unwrap().1, None, "{what}");
            assert_eq!(city("10.0.0.1"), None, "{what}");
            if ip_version == 6 {
                assert_eq!(
                    city("2001:db8::1").unwrap().0.as_deref(),
                    Some("GB"),
                    "{what}"
                );
                assert_eq!(city("2001:db9::1"), None, "{what}");
            }
        }
    }
}

#[test]
fn lookup_fills_the_keys_of_v3s_maxmind_backend_in_its_order() {
    let db = temp_db();
    let geo = GeoDb::open(&db.path).unwrap();
    assert_eq!(geo.database_type(), "GeoLite2-City");
    let fields = |ip: &str| {
        geo.lookup(ip.as_bytes()).map(|r| {
            r.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
        })
    };
    assert_eq!(
        fields("192.0.2.7").unwrap(),
        [
            "COUNTRY_CODE=US",
            "COUNTRY_NAME=United States",
            "COUNTRY_CONTINENT=North America",
            "CITY=Minneapolis",
            "POSTAL_CODE=55401",
            "LATITUDE=44.979700",
            "LONGITUDE=-93.263800",
        ]
    );
    assert_eq!(
        fields("2001:db8:1::9").unwrap(),
        [
            "COUNTRY_CODE=GB",
            "COUNTRY_NAME=United Kingdom",
            "COUNTRY_CONTINENT=Europe",
            "CITY=London",
            "POSTAL_CODE=EC1A",
            "LATITUDE=51.514200",
            "LONGITUDE=-0.093100",
        ]
    );
    // A Country-style record: only what it has.
    assert_eq!(
        fields("203.0.113.200").unwrap(),
        [
            "COUNTRY_CODE=JP",
            "COUNTRY_NAME=Japan",
            "COUNTRY_CONTINENT=Asia"
        ]
    );
    // Found, with no field: still a match.
    assert_eq!(fields("100.64.1.1"), Some(vec![]));
    assert_eq!(fields("10.0.0.1"), None);
    assert_eq!(fields("2001:db9::1"), None);
}

#[test]
fn invalid_input_is_not_found_and_never_panics() {
    let db = temp_db();
    let geo = GeoDb::open(&db.path).unwrap();
    let v4_only = TempDb::new("v4.mmdb", &database(4, 24));
    let geo4 = GeoDb::open(&v4_only.path).unwrap();
    let huge = "1".repeat(1 << 20);
    let inputs: Vec<&[u8]> = vec![
        b"",
        b" ",
        b"abc",
        b"192.0.2",
        b"192.0.2.7 ",
        b" 192.0.2.7",
        b"192.0.2.7\0",
        b"192.0.2.7/24",
        b"192.0.2.256",
        b"0300.0.2.7",
        b"\xff\xfe",
        b"::::",
        b"2001:db8::1%eth0",
        b"[2001:db8::1]",
        huge.as_bytes(),
    ];
    for input in inputs {
        assert_eq!(
            geo.lookup(input),
            None,
            "{:?}",
            String::from_utf8_lossy(input)
        );
        assert_eq!(geo4.lookup(input), None);
    }
    // An IPv6 address in an IPv4-only database: not found (an error in the reader).
    assert_eq!(geo4.lookup(b"2001:db8::1"), None);
    assert!(geo4.lookup(b"192.0.2.7").is_some());
}

#[test]
fn chained_rule_denies_by_country_and_geo_is_filled() {
    let db = temp_db();
    let rules = format!(
        "SecRule REMOTE_ADDR \"@geoLookup\" \"chain,id:1,phase:1,deny,status:403,log\"\n\
         SecRule GEO:COUNTRY_CODE \"@streq DE\" \"t:none\"\n{COPY_GEO}"
    );
    for options in [Options::default(), Options::none()] {
        let p = program_with(&db, &rules, &options);
        let (status, tx) = request(&p, "198.51.100.5", None);
        assert_eq!(status, Some(403));
        assert_eq!(tx.matched_rules().first().map(|m| m.id), Some(1));

        let (status, tx) = request(&p, "192.0.2.7", None);
        assert_eq!(status, None);
        for (k, v) in [
            ("country_code", "US"),
            ("country_code3", ""),
            ("country_name", "United States"),
            ("country_continent", "North America"),
            ("region", ""),
            ("city", "Minneapolis"),
            ("postal_code", "55401"),
            ("latitude", "44.979700"),
            ("longitude", "-93.263800"),
        ] {
            assert_eq!(tx_str(&tx, &format!("geo_{k}")), v, "GEO:{k}");
        }

        // Outside the database: no match, nothing filled.
        let (status, tx) = request(&p, "10.0.0.1", None);
        assert_eq!(status, None);
        assert_eq!(tx_str(&tx, "geo_country_code"), "");
        assert_eq!(tx_str(&tx, "geo_city"), "");

        let (status, tx) = request(&p, "2001:db8::42", None);
        assert_eq!(status, None);
        assert_eq!(tx_str(&tx, "geo_city"), "London");
    }
}

#[test]
fn invalid_header_values_do_not_match() {
    let db = temp_db();
    let rules = "SecRule REQUEST_HEADERS:X-Forwarded-For \"@geoLookup\" \
        \"id:1,phase:1,deny,status:403\"\n";
    let options = Options {
        verify: true,
        ..Options::default()
    };
    let p = program_with(&db, rules, &options);
    for xff in [
        &b"not an address"[..],
        b"",
        b"192.0.2.7, 10.0.0.1",
        b"\xff\x00\x01",
        b"10.0.0.1",
        b"999.1.1.1",
    ] {
        let (status, _) = request(&p, "192.0.2.7", Some(xff));
        assert_eq!(status, None, "{:?}", String::from_utf8_lossy(xff));
    }
    assert_eq!(request(&p, "10.0.0.1", Some(b"192.0.2.7")).0, Some(403));
    // Transformations apply as for any rule.
    let p = program(
        &db,
        "SecRule REQUEST_HEADERS:X-Forwarded-For \"@geoLookup\" \
         \"id:1,phase:1,deny,status:403,t:trim\"\n",
    );
    assert_eq!(request(&p, "10.0.0.1", Some(b"  192.0.2.7 ")).0, Some(403));
}

#[test]
fn negated_lookup_matches_unknown_addresses_and_still_fills_geo() {
    let db = temp_db();
    let rules =
        format!("SecRule REMOTE_ADDR \"!@geoLookup\" \"id:1,phase:1,deny,status:403\"\n{COPY_GEO}");
    let p = program(&db, &rules);
    assert_eq!(request(&p, "10.0.0.1", None).0, Some(403));
    assert_eq!(request(&p, "not-an-ip", None).0, Some(403));
    let (status, tx) = request(&p, "198.51.100.200", None);
    assert_eq!(status, None);
    assert_eq!(tx_str(&tx, "geo_city"), "Paris");
}

#[test]
fn a_second_lookup_overwrites_the_keys_its_record_has() {
    let db = temp_db();
    // Rules 2 and 4 read the same target with the same operator: they share a
    // prefilter group, whose union must not go stale when GEO changes.
    let rules = format!(
        "SecRule REMOTE_ADDR \"@geoLookup\" \"id:1,phase:1,pass,nolog\"\n\
         SecRule GEO:COUNTRY_CODE \"@streq FR\" \"id:2,phase:1,deny,status:401\"\n\
         SecRule REQUEST_HEADERS:X-Forwarded-For \"@geoLookup\" \"id:3,phase:1,pass,nolog\"\n\
         SecRule GEO:COUNTRY_CODE \"@streq FR\" \"id:4,phase:1,deny,status:403\"\n{COPY_GEO}"
    );
    for options in [
        Options::default(),
        Options::none(),
        Options {
            verify: true,
            ..Options::default()
        },
    ] {
        let p = program_with(&db, &rules, &options);
        let (status, tx) = request(&p, "192.0.2.7", Some(b"203.0.113.9"));
        assert_eq!(status, None);
        // JP's record has no city: Minneapolis stays, as in v3.
        assert_eq!(tx_str(&tx, "geo_country_code"), "JP");
        assert_eq!(tx_str(&tx, "geo_country_continent"), "Asia");
        assert_eq!(tx_str(&tx, "geo_city"), "Minneapolis");
        assert_eq!(
            request(&p, "192.0.2.7", Some(b"198.51.100.200")).0,
            Some(403)
        );
        // GEO still empty when rule 2 runs.
        assert_eq!(
            request(&p, "10.0.0.1", Some(b"198.51.100.200")).0,
            Some(403)
        );
        assert_eq!(request(&p, "198.51.100.200", None).0, Some(401));
    }
}

#[test]
fn never_cached_folded_or_prefiltered() {
    let db = temp_db();
    // The address is the same for every request: without the side effect, the
    // lookup would be folded at load time and GEO never filled.
    let rules = "SecAction \"id:10,phase:1,pass,nolog,setvar:tx.addr=192.0.2.7\"\n\
        SecRule TX:addr \"@geoLookup\" \"id:11,phase:1,pass,nolog\"\n\
        SecRule GEO:COUNTRY_CODE \"@streq US\" \"id:12,phase:1,deny,status:403\"\n";
    for options in [
        Options::default(),
        Options {
            verify: true,
            ..Options::default()
        },
    ] {
        let p = program_with(&db, rules, &options);
        let geo_rules: Vec<_> = p
            .rules
            .iter()
            .filter(|r| matches!(r.operator.op, CompiledOp::GeoLookup(_)))
            .collect();
        assert_eq!(geo_rules.len(), 1);
        let r = geo_rules[0];
        assert!(!r.pure, "a geoLookup rule must not be value-cached");
        assert!(r.static_result.is_none(), "folded at load time");
        assert!(r.prefilter.is_none() && r.prefilter_group.is_none());
        assert!(r.resolved_op.is_none());
        assert_eq!(
            engine::plan::admission(&p, r),
            engine::plan::Admission::Always("@geoLookup writes GEO")
        );
        // Repeated requests (the value cache is warm after the first).
        for _ in 0..3 {
            assert_eq!(request(&p, "10.0.0.1", None).0, Some(403));
        }
    }
}

#[test]
fn relative_database_path_is_resolved_from_the_configuration_file() {
    let db = temp_db();
    let dir = db.path.parent().unwrap();
    let conf = dir.join("geo.conf");
    std::fs::write(
        &conf,
        "SecRuleEngine On\nSecGeoLookupDb GeoLite2-City.mmdb\n\
         SecRule REMOTE_ADDR \"@geoLookup\" \"chain,id:1,phase:1,deny,status:403\"\n\
         SecRule GEO:COUNTRY_NAME \"@streq Germany\" \"t:none\"\n",
    )
    .unwrap();
    let p = Program::from_paths(&[&conf]).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(request(&p, "198.51.100.1", None).0, Some(403));
    assert_eq!(request(&p, "192.0.2.1", None).0, None);
}

fn load_error(conf: &str) -> String {
    match Program::from_str("geo.conf", conf) {
        Ok(_) => panic!("loaded:\n{conf}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn load_errors_name_the_database_or_the_missing_directive() {
    let db = temp_db();
    let dir = db.path.parent().unwrap();
    let rule = "SecRule REMOTE_ADDR \"@geoLookup\" \"id:1,phase:1,deny\"\n";

    // No SecGeoLookupDb at all.
    let e = load_error(rule);
    assert!(e.contains("geo.conf:1:"), "{e}");
    assert!(e.contains("@geoLookup"), "{e}");
    assert!(e.contains("no SecGeoLookupDb is configured"), "{e}");

    // A missing file: the directive fails, even without a rule using it (as v3),
    // and a rule using it adds no second error.
    let missing = dir.join("nope.mmdb");
    for rules in ["", rule] {
        let e = load_error(&format!("SecGeoLookupDb {}\n{rules}", missing.display()));
        assert!(e.contains("geo.conf:1:1: error: SecGeoLookupDb"), "{e}");
        assert!(e.contains(&missing.display().to_string()), "{e}");
        assert!(e.contains("cannot read"), "{e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }

    // Not a database.
    let junk = TempDb::new("junk.mmdb", b"this is not a MaxMind database\n");
    let e = load_error(&format!("SecGeoLookupDb {}\n{rule}", junk.path.display()));
    assert!(e.contains(&junk.path.display().to_string()), "{e}");
    assert!(e.contains("is not a MaxMind DB"), "{e}");

    // A truncated database: the metadata kept, the tree and data cut off.
    let mut cut = database(6, 24);
    let marker = cut
        .windows(14)
        .rposition(|w| w == b"\xAB\xCD\xEFMaxMind.com")
        .unwrap();
    cut.drain(..marker);
    let cut = TempDb::new("cut.mmdb", &cut);
    let e = load_error(&format!("SecGeoLookupDb {}\n", cut.path.display()));
    assert!(e.contains("is not a MaxMind DB"), "{e}");

    // A directory.
    let e = load_error(&format!("SecGeoLookupDb {}\n", dir.display()));
    assert!(e.contains("not a regular file"), "{e}");
}
