//! Gives this crate's tests and examples an rpath to libhumus_http's directory, which humus-http-sys found
//! through pkg-config (`DEP_HUMUS_HTTP_LIBDIR`): cargo does not hand a dependency's link arguments on, and
//! without it they would need LD_LIBRARY_PATH. Programs depending on this crate do the same in their own
//! build script, or install the library where the dynamic loader looks.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if let Ok(dir) = std::env::var("DEP_HUMUS_HTTP_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
