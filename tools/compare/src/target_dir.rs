//! Where cargo builds, so that the chart lands next to the build outputs.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// This workspace's target directory as `cargo metadata` reports it. Cargo
/// alone knows it for sure: `CARGO_TARGET_DIR` and `build.target-dir` in its
/// configuration move it, and a `--target` build puts the binary one level
/// deeper inside it, so the binary's own path is no reliable guide.
pub fn target_directory() -> Result<PathBuf, Box<dyn Error>> {
    // `cargo run` sets CARGO to the cargo that runs us; otherwise use PATH's.
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let cargo_name = Path::new(&cargo).display().to_string();
    // The manifest this binary was built from, so that it works from any
    // directory (the target directory is the workspace's).
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let output = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .arg("--manifest-path")
        .arg(manifest)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|error| format!("could not run `{cargo_name} metadata`: {error}"))?;
    if !output.status.success() {
        return Err(format!("`{cargo_name} metadata` failed: {}", output.status).into());
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
    let directory = metadata["target_directory"]
        .as_str()
        .ok_or("`cargo metadata` reported no target_directory")?;
    Ok(PathBuf::from(directory))
}
