//! Unit tests for the names table and the `apply` contract.

use super::Transformation;
use proptest::prelude::*;
use std::collections::HashSet;

#[test]
fn every_seclang_name_resolves() {
    for &name in seclang::names::TRANSFORMATIONS {
        let t = Transformation::from_name(name);
        assert!(t.is_some(), "t:{name} has no implementation");
    }
}

#[test]
fn every_transformation_is_a_seclang_name() {
    let names: HashSet<&str> = seclang::names::TRANSFORMATIONS.iter().copied().collect();
    for &t in Transformation::ALL {
        assert!(
            names.contains(t.name()),
            "{t:?} ({}) is not in seclang's list",
            t.name()
        );
    }
    for &(name, _) in Transformation::NAMES {
        assert!(
            names.contains(name),
            "table name {name} is not in seclang's list"
        );
    }
    assert_eq!(
        Transformation::NAMES.len(),
        seclang::names::TRANSFORMATIONS.len(),
        "the names table and seclang's list differ in size"
    );
}

#[test]
fn all_lists_each_variant_once_with_its_canonical_name_first() {
    let set: HashSet<Transformation> = Transformation::ALL.iter().copied().collect();
    assert_eq!(set.len(), Transformation::ALL.len());
    for &t in Transformation::ALL {
        let first = Transformation::NAMES
            .iter()
            .find(|(_, v)| *v == t)
            .map(|&(n, _)| n);
        assert_eq!(first, Some(t.name()), "{t:?}");
        assert_eq!(Transformation::from_name(t.name()), Some(t));
        assert_eq!(t.to_string(), t.name());
    }
    for &(_, t) in Transformation::NAMES {
        assert!(set.contains(&t), "{t:?} missing from ALL");
    }
}

#[test]
fn names_are_case_insensitive_with_aliases() {
    assert_eq!(
        Transformation::from_name("URLDECODEUNI"),
        Some(Transformation::UrlDecodeUni)
    );
    assert_eq!(
        Transformation::from_name("lowerCase"),
        Some(Transformation::Lowercase)
    );
    assert_eq!(
        Transformation::from_name("normalizePath"),
        Some(Transformation::NormalisePath)
    );
    assert_eq!(
        Transformation::from_name("normalisepath"),
        Some(Transformation::NormalisePath)
    );
    assert_eq!(
        Transformation::from_name("NormalizePathWin"),
        Some(Transformation::NormalisePathWin)
    );
    assert_eq!(Transformation::NormalisePath.name(), "normalisePath");
    assert_eq!(
        Transformation::from_name("utf8ToUnicode"),
        Some(Transformation::Utf8ToUnicode)
    );
    assert_eq!(Transformation::from_name("t:none"), None);
    assert_eq!(Transformation::from_name(""), None);
    assert_eq!(Transformation::from_name("urlDecodeUnicode"), None);
}

#[test]
fn out_is_cleared_first() {
    let mut out = b"stale".to_vec();
    assert!(Transformation::Uppercase.apply(b"abc", &mut out));
    assert_eq!(out, b"ABC");
    let mut out = b"stale".to_vec();
    assert!(!Transformation::Uppercase.apply(b"ABC", &mut out));
    assert!(out.is_empty());
    assert_eq!(Transformation::Lowercase.apply_to_vec(b"ABC"), b"abc");
    assert_eq!(Transformation::Lowercase.apply_to_vec(b"abc"), b"abc");
}

#[test]
fn digests_are_raw_binary() {
    let md5 = Transformation::Md5.apply_to_vec(b"");
    assert_eq!(
        Transformation::HexEncode.apply_to_vec(&md5),
        b"d41d8cd98f00b204e9800998ecf8427e"
    );
    let sha1 = Transformation::Sha1.apply_to_vec(b"abc");
    assert_eq!(
        Transformation::HexEncode.apply_to_vec(&sha1),
        b"a9993e364706816aba3e25717850c26c9cd0d89d"
    );
}

#[test]
fn large_inputs_are_linear() {
    // Pathological shapes for each decoder; must finish quickly (no quadratic
    // behaviour) and respect the output bound.
    let shapes: [&[u8]; 8] = [b"%", b"%u", b"&#", b"\\", b"/*", b"../", b"0x", b"\xe2\x82"];
    for shape in shapes {
        let input: Vec<u8> = shape.iter().copied().cycle().take(1 << 18).collect();
        for &t in Transformation::ALL {
            let mut out = Vec::new();
            t.apply(&input, &mut out);
            assert!(out.len() <= 4 * input.len() + 64, "{t}: output too long");
        }
    }
}

/// Bytes that matter to at least one transformation, plus anything else.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        3 => prop::sample::select(b"%uU+&#xX;\\/.*-<!>=0123456789aAfFzZ \t\r\n,^'\"(\x00\x0b\xa0\xc2\xc3\xe2\xf0\xf5\xff".to_vec()),
        1 => any::<u8>(),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn apply_contract_holds(input in prop::collection::vec(interesting_byte(), 0..48)) {
        for &t in Transformation::ALL {
            let mut out = b"dirty".to_vec();
            let changed = t.apply(&input, &mut out);
            if changed {
                prop_assert_ne!(&out, &input, "{} returned true for an unchanged value", t);
            } else {
                prop_assert!(out.is_empty(), "{} returned false with output", t);
            }
            prop_assert!(out.len() <= 4 * input.len() + 64, "{}: output too long", t);
            if t.never_lengthens() {
                prop_assert!(out.len() <= input.len(), "{} lengthened {:?}", t, input);
            }
            // Deterministic, and independent of the buffer's previous content.
            let mut again = Vec::new();
            prop_assert_eq!(t.apply(&input, &mut again), changed);
            prop_assert_eq!(&again, &out);
        }
    }

    #[test]
    fn apply_never_panics_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..256)) {
        for &t in Transformation::ALL {
            let mut out = Vec::new();
            let _ = t.apply(&input, &mut out);
        }
    }

    #[test]
    fn base64_decoding_is_bounded_by_its_valid_prefix(input in prop::collection::vec(interesting_byte(), 0..48)) {
        // What `ChainTable::base64_bounded` relies on.
        let out = Transformation::Base64Decode.apply_to_vec(&input);
        prop_assert!(out.len() <= super::base64_decode_max_len(&input));
    }

    #[test]
    fn base64_reaches_tells_the_bound_from_the_bytes_it_takes(
        input in prop::collection::vec(prop_oneof![
            12 => prop::sample::select(
                b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".to_vec()
            ),
            1 => any::<u8>(),
        ], 0..40)
    ) {
        // What a `multiMatch` union's short values rely on (`classes::fill_union`).
        for n in 0..=input.len() + 2 {
            prop_assert_eq!(
                super::base64_decode_reaches(&input, n),
                super::base64_decode_max_len(&input) >= n,
                "n = {}", n
            );
        }
    }

    #[test]
    fn encoders_round_trip(input in prop::collection::vec(any::<u8>(), 0..64)) {
        let hex = Transformation::HexEncode.apply_to_vec(&input);
        prop_assert_eq!(Transformation::HexDecode.apply_to_vec(&hex), input.clone());
        let b64 = Transformation::Base64Encode.apply_to_vec(&input);
        prop_assert_eq!(Transformation::Base64Decode.apply_to_vec(&b64), input.clone());
        prop_assert_eq!(Transformation::Base64DecodeExt.apply_to_vec(&b64), input.clone());
        let url = Transformation::UrlEncode.apply_to_vec(&input);
        prop_assert_eq!(Transformation::UrlDecode.apply_to_vec(&url), input);
    }
}
