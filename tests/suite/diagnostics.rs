//! A stream of the wrong shape gets an error that names the mistake and what
//! to change (the crate's `#[diagnostic::on_unimplemented]` texts), not a
//! trace through its bounds; and a struct holds any form of the stream with
//! one bound on its source.
//!
//! Each case is a small program checked by `cargo check` against this
//! checkout of the crate, in a target directory of its own. Only the crate's
//! own text is looked for in rustc's output, so a compiler that words its part
//! differently does not break the test.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// One program: its name, its code, and the texts its errors must contain
/// (none: it must compile).
struct Case {
    name: &'static str,
    code: &'static str,
    expected: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        name: "values_to_bounded",
        code: r#"
use bounded_buffered::BoundedStreamExt;
use futures::stream;

fn main() {
    let _ = stream::iter(0..3u32).bounded(2, 1);
}
"#,
        expected: &[
            "`bounded` runs a stream of futures, and the items of this stream are not futures",
            "map each item to the future that handles it",
        ],
    },
    Case {
        name: "futures_to_try_bounded",
        code: r#"
use bounded_buffered::BoundedStreamExt;
use futures::{StreamExt, stream};

fn main() {
    let _ = stream::iter(0..3u32)
        .map(|n| async move { Ok::<_, String>(n) })
        .try_bounded(2, 1);
}
"#,
        expected: &[
            "`try_bounded` runs a stream of `Ok(future)`s whose futures fail with the stream's error type",
            "wrap each future in `Ok(..)`",
        ],
    },
    Case {
        name: "error_types_differ",
        code: r#"
use bounded_buffered::BoundedStreamExt;
use futures::{StreamExt, stream};

fn main() {
    let _ = stream::iter(0..3u32)
        .map(|n| Ok::<_, String>(async move { Ok::<_, std::io::Error>(n) }))
        .try_bounded(2, 1);
}
"#,
        expected: &[
            "`try_bounded` runs a stream of `Ok(future)`s whose futures fail with the stream's error type",
            "give the source's items and the futures' outputs the same error type",
        ],
    },
    Case {
        name: "every_form_stored_with_one_bound",
        code: r#"
use std::time::Duration;

use bounded_buffered::{
    BoundedBuffered, BoundedStreamExt, Clocked, Expired, FutureStream, Spawned, TryBoundedBuffered,
    TryFutureStream,
};
use futures::{StreamExt, stream};

struct Plain<S: FutureStream>(BoundedBuffered<S>);
struct Timed<S: FutureStream>(BoundedBuffered<S, Clocked>);
struct Expiring<S: FutureStream>(BoundedBuffered<S, Clocked, Expired<S::Item>>);
struct Try<S: TryFutureStream>(TryBoundedBuffered<S>);
struct TryExpiring<S: TryFutureStream>(TryBoundedBuffered<S, Clocked, Expired<S::Ok>>);
struct Tasks<T>(Spawned<T>);

fn main() {
    let jobs = || stream::iter(0..3u32).map(|n| async move { n });
    let tries = || stream::iter(0..3u32).map(|n| Ok::<_, String>(async move { Ok::<_, String>(n) }));
    let _ = Plain(jobs().bounded(2, 1).ordered(2));
    let _ = Timed(jobs().bounded(2, 1).timed());
    let _ = Expiring(jobs().bounded(2, 1).max_wait(Duration::from_millis(5)));
    let _ = Try(tries().try_bounded(2, 1));
    let _ = TryExpiring(tries().try_bounded(2, 1).max_wait(Duration::from_millis(5)));
    let spawner = |task: futures::future::BoxFuture<'static, ()>| drop(task);
    let _: Tasks<Result<u32, String>> = Tasks(tries().try_bounded(2, 1).spawn_on(spawner));
}
"#,
        expected: &[],
    },
];

#[test]
fn mistakes_get_messages_that_name_them_and_every_form_is_storable() {
    let crate_root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests package sits in the repository");
    let dir = target_dir().join("diagnostics");
    let src = dir.join("src").join("bin");
    fs::create_dir_all(&src).expect("the cases' folder");
    // The cases' `futures` is futures-util as the crate itself has it: no
    // crate to check that the library does not build anyway (`futures`, by
    // default, adds its macros, and with them syn: twice the time).
    fs::write(
        dir.join("Cargo.toml"),
        format!(
            "[package]\nname = \"diagnostics\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\n\
             [workspace]\n\n[dependencies]\nbounded-buffered = {{ path = {:?} }}\n\
             futures = {{ package = \"futures-util\", version = \"0.3\", default-features = false, features = [\"std\"] }}\n",
            crate_root.display().to_string()
        ),
    )
    .expect("the cases' manifest");
    for case in CASES {
        fs::write(src.join(format!("{}.rs", case.name)), case.code).expect("a case");
    }
    // The lock file of the repository pins what the cases build against.
    fs::copy(crate_root.join("Cargo.lock"), dir.join("Cargo.lock")).expect("the lock file");
    let output = Command::new(env!("CARGO"))
        .args([
            "check",
            "--bins",
            "--keep-going",
            "--offline",
            "--color=never",
        ])
        .env("CARGO_TARGET_DIR", dir.join("target"))
        .env_remove("RUSTFLAGS")
        .current_dir(&dir)
        .output()
        .expect("cargo runs");
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = errors(&stderr);
    for case in CASES {
        let file = format!("src/bin/{}.rs", case.name);
        let mine: Vec<&String> = errors
            .iter()
            .filter(|error| error.contains(&file))
            .collect();
        if case.expected.is_empty() {
            assert!(mine.is_empty(), "{} does not compile:\n{stderr}", case.name);
            continue;
        }
        assert!(!mine.is_empty(), "{} compiles:\n{stderr}", case.name);
        for text in case.expected {
            assert!(
                mine.iter().any(|error| error.contains(text)),
                "{}: no error says {text:?}; cargo said:\n{stderr}",
                case.name
            );
        }
    }
}

/// rustc's errors, each with its message, its place, its labels and notes
/// (what follows an `error` line up to the next error or warning), the lines
/// joined, so a message rustc wraps is still found.
fn errors(stderr: &str) -> Vec<String> {
    let mut errors = Vec::new();
    let mut current: Option<String> = None;
    for line in stderr.lines() {
        if line.starts_with("error") || line.starts_with("warning") {
            errors.extend(current.take());
            if line.starts_with("error[") {
                current = Some(String::new());
            }
        }
        if let Some(error) = &mut current {
            error.push_str(line.trim());
            error.push(' ');
        }
    }
    errors.extend(current);
    errors
}

/// The target directory this test binary was built in (`target/debug/deps/..`
/// is where it runs from).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    exe.ancestors()
        .nth(3)
        .expect("the binary sits in <target>/<profile>/deps")
        .to_path_buf()
}
