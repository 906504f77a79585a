//! SIGHUP reloads and SIGTERM shuts down gracefully (`Server::run_until_signal`, as
//! `palisade serve` runs). A binary of its own: signals are process-wide.
#![allow(clippy::unwrap_used, missing_docs)]
#![cfg(unix)]

mod common;

use std::time::Duration;

fn config(word: &str) -> String {
    let rules = format!(
        "SecRuleEngine On\nSecRule ARGS \"@contains {word}\" \"id:10,phase:1,deny,status:403\"\n"
    );
    common::EchoConfig {
        rules: &rules,
        ..Default::default()
    }
    .toml()
}

fn kill(sig: &str) {
    let pid = std::process::id().to_string();
    let st = std::process::Command::new("kill")
        .args([sig, &pid])
        .status()
        .unwrap();
    assert!(st.success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sighup_reloads_and_sigterm_stops() {
    let mut h = common::start(&config("alpha")).await;
    let addr = h.addr;
    let server = h.server.take().unwrap();
    let running = tokio::spawn(server.run_until_signal());
    // Give the signal handlers a moment to be installed.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(common::get(addr, "/?q=alpha").await.status, 403);
    h.write_config(&config("omega"));
    kill("-HUP");
    let mut reloaded = false;
    for _ in 0..100 {
        if common::get(addr, "/?q=omega").await.status == 403 {
            reloaded = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reloaded, "SIGHUP reloaded the rules");
    assert_eq!(common::get(addr, "/?q=alpha").await.status, 200);
    kill("-TERM");
    let clean = tokio::time::timeout(Duration::from_secs(15), running)
        .await
        .unwrap()
        .unwrap();
    assert!(clean);
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
