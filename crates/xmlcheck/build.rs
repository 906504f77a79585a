//! Links the system libxml2 (2.9 or later; headers are not needed: the few
//! declarations used are written by hand in `src/ffi.rs`).
//!
//! `pkg-config --libs libxml-2.0` supplies the search path and library name when
//! pkg-config is installed; otherwise the library is linked as `-lxml2` from the
//! default search path. Nothing is downloaded or generated.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_LIBDIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_SYSROOT_DIR");
    let from_pkg_config = Command::new("pkg-config")
        .args(["--libs", "libxml-2.0"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned());
    let mut linked = false;
    if let Some(flags) = from_pkg_config {
        for flag in flags.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                println!("cargo:rustc-link-search=native={dir}");
            } else if let Some(lib) = flag.strip_prefix("-l") {
                println!("cargo:rustc-link-lib={lib}");
                linked |= lib == "xml2";
            }
        }
    }
    if !linked {
        println!(
            "cargo:warning=pkg-config found no libxml-2.0; linking -lxml2 from the default \
             search path (install libxml2-dev and pkg-config if the link fails)"
        );
        println!("cargo:rustc-link-lib=xml2");
    }
}
