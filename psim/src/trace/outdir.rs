//! Output-directory preparation and the atomic file-write primitive.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

use super::flows::FLOWS_DIR;
use super::manifest::MANIFEST_FILE;
use super::OutputError;

/// Suffix of in-progress files. A file with this suffix is never a finished
/// output: it is either being written right now or was left by a crash, which
/// is why `prepare_out_dir(.., force = true)` may delete it.
pub const TMP_SUFFIX: &str = ".tmp";

/// Prepare an output directory before a run.
///
/// * Missing: created together with its parents.
/// * Exists and empty: used as is.
/// * Exists and non-empty: refused with [`OutputError::NotEmpty`] unless
///   `force`, so that a typo in `--out` cannot silently mix two runs. With
///   `force` only psim's own outputs are removed (`manifest.json` first, so an
///   interrupted clean-up still reads as an incomplete run, then `flows/`,
///   the traces `packets/`, `queues/`, `queues.h5`, and top-level `*.tmp`
///   files); anything else the user keeps there survives.
/// * Exists and is not a directory: [`OutputError::NotADirectory`].
///
/// Finally a probe file is created and removed, so that an unwritable
/// directory is reported before hours of simulation rather than at the end.
/// Failure to create the directory or the probe is
/// [`OutputError::NotWritable`].
pub fn prepare_out_dir(dir: &Path, force: bool) -> Result<(), OutputError> {
    match fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(OutputError::NotADirectory {
                path: dir.to_path_buf(),
            })
        }
        Ok(_) => {
            if !is_empty_dir(dir)? {
                if !force {
                    return Err(OutputError::NotEmpty {
                        path: dir.to_path_buf(),
                    });
                }
                clear_psim_outputs(dir)?;
            }
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            fs::create_dir_all(dir).map_err(|source| OutputError::NotWritable {
                path: dir.to_path_buf(),
                source,
            })?;
        }
        // E.g. a path under a regular file (ENOTDIR) or a permission problem
        // on a parent: either way we cannot write there.
        Err(source) => {
            return Err(OutputError::NotWritable {
                path: dir.to_path_buf(),
                source,
            })
        }
    }
    probe_writable(dir)
}

fn is_empty_dir(dir: &Path) -> Result<bool, OutputError> {
    let mut entries = fs::read_dir(dir).map_err(|e| OutputError::io(dir, e))?;
    match entries.next() {
        None => Ok(true),
        Some(Ok(_)) => Ok(false),
        Some(Err(e)) => Err(OutputError::io(dir, e)),
    }
}

/// Remove psim's own outputs from `dir`, leaving everything else alone.
fn clear_psim_outputs(dir: &Path) -> Result<(), OutputError> {
    // The manifest goes first: if we are interrupted halfway, the directory
    // must not claim to hold a complete run.
    remove_entry(&dir.join(MANIFEST_FILE))?;
    remove_entry(&dir.join(FLOWS_DIR))?;
    for traced in [
        "packets",
        "queues",
        "queues.h5",
        "tofino",
        "record",
        "checkpoint",
    ] {
        remove_entry(&dir.join(traced))?;
    }
    let entries = fs::read_dir(dir).map_err(|e| OutputError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| OutputError::io(dir, e))?;
        if entry.file_name().to_string_lossy().ends_with(TMP_SUFFIX) {
            remove_entry(&entry.path())?;
        }
    }
    Ok(())
}

/// Remove a file, symlink or directory tree; a missing path is not an error.
/// Symlinks are removed themselves, never followed, so `--force` cannot
/// delete data outside the output directory.
fn remove_entry(path: &Path) -> Result<(), OutputError> {
    let meta = match fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(OutputError::io(path, e)),
    };
    let result = if meta.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    };
    result.map_err(|e| OutputError::io(path, e))
}

fn probe_writable(dir: &Path) -> Result<(), OutputError> {
    let probe = dir.join(format!(
        ".psim-write-probe-{}{TMP_SUFFIX}",
        std::process::id()
    ));
    let not_writable = |source| OutputError::NotWritable {
        path: dir.to_path_buf(),
        source,
    };
    File::create(&probe).map_err(not_writable)?;
    fs::remove_file(&probe).map_err(not_writable)
}

/// The temporary name used while `final_path` is being written: same
/// directory (so the rename is atomic on POSIX file systems), `.tmp` suffix.
pub(crate) fn tmp_path(final_path: &Path) -> PathBuf {
    let mut name: OsString = final_path
        .file_name()
        .map(OsString::from)
        .unwrap_or_else(|| OsString::from("unnamed"));
    name.push(TMP_SUFFIX);
    final_path.with_file_name(name)
}

/// Write `final_path` atomically: `write` fills a temporary file in the same
/// directory, which is fsynced and renamed over `final_path`, and then the
/// directory is fsynced so the rename itself survives a crash. Readers thus
/// see either no file or the complete file, never a prefix. On failure the
/// temporary file is removed (best effort) and the error returned.
pub(crate) fn write_atomic<F>(final_path: &Path, write: F) -> Result<PathBuf, OutputError>
where
    F: FnOnce(&mut File) -> Result<(), OutputError>,
{
    let tmp = tmp_path(final_path);
    let result = (|| {
        let mut file = File::create(&tmp).map_err(|e| OutputError::io(&tmp, e))?;
        write(&mut file)?;
        file.sync_all().map_err(|e| OutputError::io(&tmp, e))?;
        drop(file);
        fs::rename(&tmp, final_path).map_err(|e| OutputError::io(final_path, e))
    })();
    if let Err(e) = result {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    sync_parent_dir(final_path)?;
    Ok(final_path.to_path_buf())
}

#[cfg(unix)]
fn sync_parent_dir(path: &Path) -> Result<(), OutputError> {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    File::open(parent)
        .and_then(|d| d.sync_all())
        .map_err(|e| OutputError::io(parent, e))
}

#[cfg(not(unix))]
fn sync_parent_dir(_path: &Path) -> Result<(), OutputError> {
    // Directories cannot be opened for fsync on this platform; the rename is
    // still atomic, only its durability across power loss is weaker.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    #[test]
    fn missing_dir_is_created_with_parents() {
        let t = tempfile::tempdir().unwrap();
        let dir = t.path().join("a/b/c");
        prepare_out_dir(&dir, false).unwrap();
        assert!(dir.is_dir());
        assert!(names(&dir).is_empty(), "probe file must be removed");
    }

    #[test]
    fn empty_existing_dir_is_accepted() {
        let t = tempfile::tempdir().unwrap();
        prepare_out_dir(t.path(), false).unwrap();
        assert!(names(t.path()).is_empty());
    }

    #[test]
    fn non_empty_dir_is_refused_without_force() {
        let t = tempfile::tempdir().unwrap();
        fs::write(t.path().join("notes.txt"), "keep").unwrap();
        let err = prepare_out_dir(t.path(), false).unwrap_err();
        assert!(matches!(err, OutputError::NotEmpty { .. }), "{err:?}");
        assert_eq!(
            err.to_string(),
            format!(
                "output directory {} is not empty (use --force to overwrite)",
                t.path().display()
            )
        );
        assert_eq!(names(t.path()), vec!["notes.txt"]);
    }

    #[test]
    fn force_removes_only_psim_outputs() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path();
        fs::write(d.join("manifest.json"), "{}").unwrap();
        fs::create_dir(d.join("flows")).unwrap();
        fs::write(d.join("flows/part-00000.parquet"), "x").unwrap();
        fs::write(d.join("manifest.json.tmp"), "x").unwrap();
        for sub in ["packets", "queues"] {
            fs::create_dir(d.join(sub)).unwrap();
            fs::write(d.join(sub).join("part-00000.parquet"), "x").unwrap();
        }
        fs::write(d.join("queues.h5"), "x").unwrap();
        fs::write(d.join("notes.txt"), "keep").unwrap();
        fs::create_dir(d.join("plots")).unwrap();
        fs::write(d.join("plots/fct.png"), "keep").unwrap();
        prepare_out_dir(d, true).unwrap();
        assert_eq!(names(d), vec!["notes.txt", "plots"]);
        assert_eq!(fs::read_to_string(d.join("notes.txt")).unwrap(), "keep");
        assert!(d.join("plots/fct.png").is_file());
    }

    #[cfg(unix)]
    #[test]
    fn force_removes_symlinks_without_following_them() {
        let t = tempfile::tempdir().unwrap();
        let outside = t.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("precious"), "keep").unwrap();
        let out = t.path().join("out");
        fs::create_dir(&out).unwrap();
        std::os::unix::fs::symlink(&outside, out.join("flows")).unwrap();
        prepare_out_dir(&out, true).unwrap();
        assert!(names(&out).is_empty());
        assert!(outside.join("precious").is_file());
    }

    #[test]
    fn a_file_path_is_refused() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("somefile");
        fs::write(&f, "x").unwrap();
        for force in [false, true] {
            let err = prepare_out_dir(&f, force).unwrap_err();
            assert!(matches!(err, OutputError::NotADirectory { .. }), "{err:?}");
            assert!(err.to_string().contains(&f.display().to_string()));
        }
        assert_eq!(fs::read_to_string(&f).unwrap(), "x");
    }

    /// Permission bits do not stop root, so "unwritable" is exercised with a
    /// path below a regular file, which fails for every user.
    #[test]
    fn path_under_a_file_is_not_writable() {
        let t = tempfile::tempdir().unwrap();
        let f = t.path().join("somefile");
        fs::write(&f, "x").unwrap();
        let dir = f.join("sub");
        let err = prepare_out_dir(&dir, false).unwrap_err();
        assert!(matches!(err, OutputError::NotWritable { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        assert_eq!(err.path(), dir.as_path());
    }

    #[test]
    fn write_atomic_leaves_no_tmp_and_cleans_up_on_failure() {
        let t = tempfile::tempdir().unwrap();
        let target = t.path().join("out.txt");
        write_atomic(&target, |f| {
            use std::io::Write;
            f.write_all(b"hello").map_err(|e| OutputError::io("x", e))
        })
        .unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"hello");
        assert_eq!(names(t.path()), vec!["out.txt"]);

        let failing = t.path().join("fail.txt");
        let err = write_atomic(&failing, |_| {
            Err(OutputError::InvalidData {
                path: failing.clone(),
                detail: "boom".into(),
            })
        })
        .unwrap_err();
        assert!(matches!(err, OutputError::InvalidData { .. }));
        assert_eq!(names(t.path()), vec!["out.txt"]);
    }

    #[test]
    fn tmp_path_is_a_sibling() {
        assert_eq!(
            tmp_path(Path::new("/x/flows/part-00001.parquet")),
            Path::new("/x/flows/part-00001.parquet.tmp")
        );
    }
}
