//! `Include`: paths relative to the including file, globs, directories, cycles and
//! unreadable files.

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::fs;

use seclang::{load_paths, Directive, ErrorKind};

fn ids(loaded: &seclang::Loaded) -> Vec<u32> {
    loaded
        .config
        .items
        .iter()
        .filter_map(|i| match &i.directive {
            Directive::Rule(r) => r.id(),
            _ => None,
        })
        .collect()
}

#[test]
fn includes_are_relative_to_the_including_file_and_expand_globs_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::create_dir_all(root.join("conf/rules")).unwrap();
    fs::write(
        root.join("conf/main.conf"),
        "SecAction \"id:1,phase:1,pass\"\nInclude rules/*.conf\nSecAction \"id:9,phase:1,pass\"\n",
    )
    .unwrap();
    fs::write(
        root.join("conf/rules/b.conf"),
        "SecAction \"id:3,phase:1,pass\"\n",
    )
    .unwrap();
    fs::write(
        root.join("conf/rules/a.conf"),
        "SecAction \"id:2,phase:1,pass\"\nInclude ../extra.conf\n",
    )
    .unwrap();
    fs::write(root.join("conf/extra.conf"), "SecMarker EXTRA\n").unwrap();
    let loaded = load_paths(&[root.join("conf/main.conf")]);
    assert!(loaded.is_ok(), "{}", loaded.render_errors());
    assert_eq!(ids(&loaded), [1, 2, 3, 9]);
    assert_eq!(loaded.sources.files().len(), 4);
    assert!(matches!(&loaded.config.items[2].directive, Directive::Marker(m) if m == "EXTRA"));
}

#[test]
fn a_directory_argument_loads_its_conf_files_sorted() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("20.conf"),
        "SecAction \"id:20,phase:1,pass\"\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("10.conf"),
        "SecAction \"id:10,phase:1,pass\"\n",
    )
    .unwrap();
    fs::write(dir.path().join("notes.txt"), "not a config\n").unwrap();
    let loaded = load_paths(&[dir.path()]);
    assert!(loaded.is_ok(), "{}", loaded.render_errors());
    assert_eq!(ids(&loaded), [10, 20]);
}

#[test]
fn include_cycles_are_reported_at_the_include() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("a.conf"),
        "SecAction \"id:1,phase:1,pass\"\nInclude b.conf\n",
    )
    .unwrap();
    fs::write(dir.path().join("b.conf"), "\n\nInclude a.conf\n").unwrap();
    let loaded = load_paths(&[dir.path().join("a.conf")]);
    assert_eq!(loaded.errors.len(), 1, "{}", loaded.render_errors());
    let e = &loaded.errors[0];
    assert_eq!(e.kind, ErrorKind::IncludeCycle);
    let span = e.span.unwrap();
    assert!(loaded.sources.path(span.file).ends_with("b.conf"));
    assert_eq!((span.line, span.col), (3, 9));
    assert!(e.message.contains("a.conf -> "), "{}", e.message);
}

#[test]
fn unreadable_top_level_path_is_an_error_without_location() {
    let loaded = load_paths(&["/nonexistent/palisade.conf"]);
    assert_eq!(loaded.errors.len(), 1);
    assert_eq!(loaded.errors[0].kind, ErrorKind::UnreadableInclude);
    assert!(loaded.errors[0].span.is_none());
}

#[test]
fn rendered_diagnostic_shows_location_line_caret_and_help() {
    let loaded = seclang::parse_str(
        "rules.conf",
        "SecRuleEngine On\nSecRule ARGS \"@rx a\" \\\n    \"id:1,phase:2,t:lowercse,deny\"\n",
    );
    let rendered = loaded.render_errors();
    let expected = "\
rules.conf:3:21: error[unknown-transformation]: unknown transformation `lowercse`
  |
3 |     \"id:1,phase:2,t:lowercse,deny\"
  |                     ^^^^^^^^
  = help: did you mean `lowercase`?
";
    assert_eq!(rendered, expected);
}
