//! Finds libhumus_http through pkg-config (`humus_http.pc`, installed by `cmake --install` or
//! `scripts/stage.sh`), as any program built against the installed library would.
//!
//! Outside the system library directories the library is found at run time through an rpath: this build
//! script adds one to its own crate's test binaries, and hands the directory to the crates that depend on it
//! as `DEP_HUMUS_HTTP_LIBDIR` (cargo does not pass link arguments on to dependents; the safe crate's build
//! script adds the same rpath to its tests and examples). The header's directory goes out as
//! `DEP_HUMUS_HTTP_INCLUDE`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");

    // The ABI major is the SONAME's: any 0.x from 0.1 on declares every function this crate declares.
    let library = match pkg_config::Config::new().range_version("0.1".."1.0").probe("humus_http") {
        Ok(library) => library,
        Err(e) => panic!(
            "humus-http-sys: libhumus_http was not found through pkg-config ({e}).\n\
             Install the library (cmake --install) or stage it with `scripts/stage.sh dev`, then point \
             PKG_CONFIG_PATH at the directory holding humus_http.pc, e.g. \
             PKG_CONFIG_PATH=<repo>/build/stage-dev/lib/pkgconfig"
        ),
    };

    for dir in &library.link_paths {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
    }
    if let Some(dir) = library.link_paths.first() {
        println!("cargo:libdir={}", dir.display());
    }
    if let Some(dir) = library.include_paths.first() {
        println!("cargo:include={}", dir.display());
        // The layout test compiles a C probe against the very header this build found.
        println!("cargo:rustc-env=HUMUS_HTTP_INCLUDE_DIR={}", dir.display());
    }
}
