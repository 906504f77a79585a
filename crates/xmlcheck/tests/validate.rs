//! DTD and XML Schema loading and validation, and what libxml2 must never do
//! (print, fetch, read files for a request document).

#![allow(clippy::unwrap_used)] // tests fail by panicking

use std::io::Read as _;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use xmlcheck::{Dtd, Invalid, LoadError, Schema};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// Valid against both `note.dtd` and `note.xsd`.
const VALID: &[u8] = b"<?xml version=\"1.0\"?><note><to>alice</to><body>hi</body></note>";

#[test]
fn dtd_accepts_a_valid_document() {
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    assert_eq!(dtd.validate(VALID), Ok(()));
    assert_eq!(
        dtd.validate(b"<note id=\"n1\"><to>alice</to><body>hi</body></note>"),
        Ok(())
    );
    assert_eq!(dtd.path(), data("note.dtd"));
}

#[test]
fn dtd_refuses_an_invalid_document_with_reasons() {
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    for doc in [
        &b"<note><body>hi</body></note>"[..],
        b"<note><to>a</to><body>b</body><extra/></note>",
        b"<note bad=\"1\"><to>a</to><body>b</body></note>",
        b"<other/>",
    ] {
        match dtd.validate(doc) {
            Err(Invalid::NotValid(m)) => assert!(!m.is_empty(), "{doc:?}: no message"),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(doc)),
        }
    }
    let err = dtd.validate(b"<note><body>hi</body></note>").unwrap_err();
    assert!(err.to_string().contains("not valid"), "{err}");
    assert!(
        err.messages().iter().any(|m| m.contains("note")),
        "{:?}",
        err.messages()
    );
}

#[test]
fn the_documents_own_doctype_is_ignored() {
    // The internal subset allows anything; validation uses the loaded DTD only.
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    let doc = b"<!DOCTYPE note [<!ELEMENT note ANY>]><note><x/></note>";
    assert!(matches!(dtd.validate(doc), Err(Invalid::NotValid(_))));
}

#[test]
fn malformed_and_empty_documents_are_not_well_formed() {
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    let xsd = Schema::load(&data("note.xsd")).unwrap();
    for doc in [&b""[..], b"<note>", b"<a></b>", b"not xml", b"<a/>junk"] {
        assert!(
            matches!(dtd.validate(doc), Err(Invalid::NotWellFormed(_))),
            "{doc:?}"
        );
        assert!(
            matches!(xsd.validate(doc), Err(Invalid::NotWellFormed(_))),
            "{doc:?}"
        );
    }
    let err = xsd.validate(b"<a></b>").unwrap_err();
    assert!(!err.messages().is_empty());
    assert!(err.to_string().contains("not well-formed"), "{err}");
}

#[test]
fn schema_accepts_and_refuses() {
    let xsd = Schema::load(&data("note.xsd")).unwrap();
    assert_eq!(
        xsd.validate(b"<note priority=\"2\"><to>a</to><body>b</body></note>"),
        Ok(())
    );
    for doc in [
        &b"<note><to>a</to></note>"[..],
        b"<note priority=\"-1\"><to>a</to><body>b</body></note>",
        b"<note><body>b</body><to>a</to></note>",
        b"<other/>",
    ] {
        match xsd.validate(doc) {
            Err(Invalid::NotValid(m)) => assert!(!m.is_empty()),
            other => panic!("{}: {other:?}", String::from_utf8_lossy(doc)),
        }
    }
}

#[test]
fn schema_includes_local_files() {
    let xsd = Schema::load(&data("main.xsd")).unwrap();
    assert_eq!(
        xsd.validate(b"<order><item>a</item><item>b</item></order>"),
        Ok(())
    );
    assert!(xsd.validate(b"<order/>").is_err());
}

#[test]
fn missing_files_are_io_errors() {
    let e = Dtd::load(&data("missing.dtd")).unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }), "{e:?}");
    assert!(e.to_string().contains("missing.dtd"), "{e}");
    let e = Schema::load(&data("missing.xsd")).unwrap_err();
    assert!(matches!(e, LoadError::Io { .. }), "{e:?}");
    let e = Schema::load(&data("")).unwrap_err();
    assert!(e.to_string().contains("not a regular file"), "{e}");
}

#[test]
fn invalid_files_are_refused_with_reasons() {
    for e in [
        Dtd::load(&data("broken.dtd")).unwrap_err(),
        Schema::load(&data("broken.xsd")).unwrap_err(),
        Schema::load(&data("notxml.xsd")).unwrap_err(),
    ] {
        match &e {
            LoadError::Invalid { messages, .. } => assert!(!messages.is_empty(), "{e}"),
            other => panic!("{other:?}"),
        }
        assert!(e.to_string().contains("is not a valid"), "{e}");
    }
    let e = Schema::load(&data("broken.xsd")).unwrap_err();
    assert!(e.to_string().contains("noSuchType"), "{e}");
}

#[test]
fn external_entities_of_a_document_are_never_read() {
    // If `to.xml` were read and substituted, the note would be valid.
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    let file = data("to.xml");
    let doc = format!(
        "<!DOCTYPE note [<!ENTITY e SYSTEM \"{}\">]><note>&e;<body>b</body></note>",
        file.display()
    );
    assert!(matches!(
        dtd.validate(doc.as_bytes()),
        Err(Invalid::NotValid(_))
    ));
}

/// Whether anything connected to `listener` (non-blocking check).
fn connected(listener: &TcpListener) -> bool {
    listener.set_nonblocking(true).unwrap();
    match listener.accept() {
        Ok((mut s, _)) => {
            let mut buf = [0u8; 64];
            let _ = s.read(&mut buf);
            true
        }
        Err(_) => false,
    }
}

#[test]
fn the_network_is_never_used() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/x.dtd", listener.local_addr().unwrap());
    let dtd = Dtd::load(&data("note.dtd")).unwrap();
    let xsd = Schema::load(&data("note.xsd")).unwrap();
    let docs = [
        format!("<!DOCTYPE note SYSTEM \"{url}\"><note><to>a</to><body>b</body></note>"),
        format!("<!DOCTYPE note [<!ENTITY e SYSTEM \"{url}\">]><note><to>&e;</to><body>b</body></note>"),
        format!("<note xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:noNamespaceSchemaLocation=\"{url}\"><to>a</to><body>b</body></note>"),
    ];
    for doc in &docs {
        let _ = dtd.validate(doc.as_bytes());
        let _ = xsd.validate(doc.as_bytes());
    }
    // A DTD file whose parameter entity names a URL: refused at load time.
    let dir = std::env::temp_dir().join(format!("xmlcheck-net-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let remote_dtd = dir.join("remote.dtd");
    std::fs::write(
        &remote_dtd,
        format!("<!ENTITY % ext SYSTEM \"{url}\">\n%ext;\n<!ELEMENT a EMPTY>\n"),
    )
    .unwrap();
    let _ = Dtd::load(&remote_dtd);
    let remote_xsd = dir.join("remote.xsd");
    std::fs::write(
        &remote_xsd,
        format!("<xs:schema xmlns:xs=\"http://www.w3.org/2001/XMLSchema\"><xs:include schemaLocation=\"{url}\"/></xs:schema>"),
    )
    .unwrap();
    let _ = Schema::load(&remote_xsd);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!connected(&listener), "libxml2 opened a connection");
}

#[test]
fn validators_are_shared_across_threads() {
    let dtd = Arc::new(Dtd::load(&data("note.dtd")).unwrap());
    let xsd = Arc::new(Schema::load(&data("note.xsd")).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (dtd, xsd) = (Arc::clone(&dtd), Arc::clone(&xsd));
            std::thread::spawn(move || {
                for i in 0..200 {
                    let good = (i + t) % 2 == 0;
                    let doc: &[u8] = if good {
                        VALID
                    } else {
                        b"<note><body>b</body></note>"
                    };
                    assert_eq!(dtd.validate(doc).is_ok(), good);
                    assert_eq!(xsd.validate(doc).is_ok(), good);
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn messages_are_bounded() {
    let xsd = Schema::load(&data("note.xsd")).unwrap();
    let mut doc = String::from("<note><to>a</to><body>b</body>");
    for i in 0..500 {
        doc.push_str(&format!("<x{i}/>"));
    }
    doc.push_str("</note>");
    let err = xsd.validate(doc.as_bytes()).unwrap_err();
    assert!(err.messages().len() <= 17, "{}", err.messages().len());
}

/// Runs the noisy operations in a child process and checks libxml2 printed
/// nothing on its stderr (libxml2 writes to the file descriptor directly, which
/// the test harness does not capture).
#[test]
fn libxml2_prints_nothing() {
    if std::env::var_os("XMLCHECK_NOISY_CHILD").is_some() {
        let dtd = Dtd::load(&data("note.dtd")).unwrap();
        let xsd = Schema::load(&data("note.xsd")).unwrap();
        for doc in [
            &b"<a></b>"[..],
            b"<note/>",
            b"",
            b"<p:a/>",
            b"<note>&undefined;</note>",
        ] {
            let _ = dtd.validate(doc);
            let _ = xsd.validate(doc);
        }
        let _ = Dtd::load(&data("broken.dtd"));
        let _ = Schema::load(&data("broken.xsd"));
        let _ = Schema::load(&data("notxml.xsd"));
        // On another thread too (libxml2's error handlers are per thread).
        std::thread::spawn(move || {
            let _ = dtd.validate(b"<a></b>");
            let _ = xsd.validate(b"<note/>");
            let _ = Schema::load(&data("broken.xsd"));
        })
        .join()
        .unwrap();
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "libxml2_prints_nothing", "--test-threads=1"])
        .env("XMLCHECK_NOISY_CHILD", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.trim().is_empty(), "libxml2 printed: {stderr}");
}
