//! Writing what a subcommand produces without losing or half-writing
//! anything.
//!
//! - **Standard output** may close before the tool is done (`jitc run ... |
//!   head -c1`). Writes go through [`print`], which turns a closed pipe or
//!   any other write error into an error message instead of the panic of
//!   `println!`.
//! - **Files** are written all-or-nothing through a [`Transaction`]: each
//!   file is staged as a temporary file in its destination's folder,
//!   written and synced; only when every staged write has succeeded are
//!   they renamed over their destinations. A failure at any point (a full
//!   disk, a file-size limit, a folder that does not exist, a destination
//!   that is a folder) leaves every destination as it was, and the
//!   temporary files are removed. Destinations that are not regular files
//!   (`/dev/null`, pipes) are written directly: there is no old content to
//!   keep.
//! - **Read-modify-write files** (profiles that several processes merge
//!   into) are updated under an exclusive lock on a sibling lock file, so
//!   concurrent writers serialize instead of losing each other's updates:
//!   see [`update_locked`].

use std::{
    fs::File,
    io::{self, Write},
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};
use tempfile::NamedTempFile;

/// Writes `text` to standard output and flushes it.
pub fn print(text: impl AsRef<[u8]>) -> Result<(), String> {
    let mut stdout = io::stdout().lock();
    stdout
        .write_all(text.as_ref())
        .and_then(|()| stdout.flush())
        .map_err(|e| match e.kind() {
            io::ErrorKind::BrokenPipe => {
                "standard output was closed before all output was written".to_owned()
            }
            _ => format!("cannot write standard output: {e}"),
        })
}

/// Files staged for an all-or-nothing write.
#[derive(Default)]
pub struct Transaction {
    staged: Vec<(NamedTempFile, PathBuf)>,
}

/// The folder a file at `path` lives in.
fn folder(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

impl Transaction {
    /// An empty transaction.
    pub fn new() -> Self {
        Self::default()
    }

    /// Stages `path` with the content `write` produces. Nothing is visible
    /// at `path` until [`Self::commit`].
    ///
    /// Where the destination is not a regular file (`/dev/null`, a pipe, a
    /// terminal) there is nothing to replace: it is written at once. A
    /// symbolic link is followed, so its target is replaced and the link
    /// kept; an existing file keeps its permissions, and a new one gets
    /// the usual `0o666` less the umask. A folder is refused here, before
    /// anything is committed.
    pub fn stage(
        &mut self,
        path: &Path,
        write: impl FnOnce(&mut io::BufWriter<&mut File>) -> io::Result<()>,
    ) -> Result<(), String> {
        let failed = |e: io::Error| format!("cannot write '{}': {e}", path.display());
        let existing = match std::fs::metadata(path) {
            Ok(metadata) => Some(metadata),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(failed(e)),
        };
        let target = match &existing {
            Some(metadata) if metadata.is_dir() => {
                return Err(format!("cannot write '{}': it is a folder", path.display()));
            }
            Some(metadata) if !metadata.is_file() => {
                let mut file = File::options().write(true).open(path).map_err(failed)?;
                let mut writer = io::BufWriter::new(&mut file);
                write(&mut writer).map_err(failed)?;
                return writer.flush().map_err(failed);
            }
            Some(_) => std::fs::canonicalize(path).map_err(failed)?,
            None => path.to_owned(),
        };
        let permissions = match &existing {
            Some(metadata) => metadata.permissions(),
            // The kernel applies the umask to a new file's mode.
            None => std::fs::Permissions::from_mode(0o666),
        };
        let mut temporary = tempfile::Builder::new()
            .prefix(".jitc-")
            .suffix(".tmp")
            .permissions(permissions.clone())
            .tempfile_in(folder(&target))
            .map_err(failed)?;
        if existing.is_some() {
            // Exactly the old file's mode, not masked.
            temporary.as_file().set_permissions(permissions).map_err(failed)?;
        }
        {
            let mut writer = io::BufWriter::new(temporary.as_file_mut());
            write(&mut writer).map_err(failed)?;
            writer.flush().map_err(failed)?;
        }
        temporary.as_file().sync_all().map_err(failed)?;
        self.staged.push((temporary, target));
        Ok(())
    }

    /// Renames every staged file over its destination. A rename within one
    /// folder is atomic; all of them are attempted only after every write
    /// has succeeded, and every destination was checked when it was
    /// staged, so what is left to fail is the rename itself (the folder
    /// removed or made read-only in between).
    pub fn commit(self) -> Result<(), String> {
        for (temporary, path) in self.staged {
            temporary
                .persist(&path)
                .map_err(|e| format!("cannot write '{}': {}", path.display(), e.error))?;
            sync_folder(&path);
        }
        Ok(())
    }
}

/// Makes a rename in `path`'s folder durable; best effort, since not every
/// file system can sync a folder.
fn sync_folder(path: &Path) {
    if let Ok(folder) = File::open(folder(path)) {
        let _ = folder.sync_all();
    }
}

/// Writes `bytes` to `path` all-or-nothing.
pub fn write_file(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    let mut transaction = Transaction::new();
    transaction.stage(path, |w| w.write_all(bytes.as_ref()))?;
    transaction.commit()
}

/// Writes `bytes` to the `-o`-style destination `path`: standard output
/// for `-`, else the file, all-or-nothing.
pub fn emit(path: &Path, bytes: impl AsRef<[u8]>) -> Result<(), String> {
    if path.as_os_str() == "-" {
        print(bytes)
    } else {
        write_file(path, bytes)
    }
}

/// Reads, changes and writes back `path` while holding an exclusive lock
/// on `path` + `.lock`, so two processes updating the same file one after
/// the other each see the other's result. `update` gets the current text
/// (`None` when the file does not exist) and returns the new one; the
/// write is all-or-nothing.
pub fn update_locked(
    path: &Path,
    update: impl FnOnce(Option<String>) -> Result<String, String>,
) -> Result<(), String> {
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock_path = PathBuf::from(lock_path);
    let lock = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| format!("cannot lock '{}': {e}", path.display()))?;
    lock.lock()
        .map_err(|e| format!("cannot lock '{}': {e}", path.display()))?;
    let current = match std::fs::read_to_string(path) {
        Ok(text) => Some(text),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(format!("cannot read '{}': {e}", path.display())),
    };
    let text = update(current)?;
    write_file(path, &text)
    // The lock is released when `lock` is dropped, after the rename.
}

/// Runs `f` with the process's standard error sent to a temporary file,
/// and gives `f`'s result and what was written there. For output that
/// MLIR writes to the standard error itself (IR dumps), which jitc filters.
pub fn capture_stderr<T>(f: impl FnOnce() -> T) -> (T, Result<String, String>) {
    let file = match tempfile::tempfile() {
        Ok(file) => file,
        Err(e) => return (f(), Err(format!("cannot make a temporary file: {e}"))),
    };
    use std::os::fd::AsRawFd;
    // SAFETY: descriptor calls on the process's standard error, which is
    // put back before returning, and on descriptors this function owns.
    let saved = unsafe { libc::dup(2) };
    if saved < 0 {
        return (f(), Err("cannot duplicate the standard error".to_owned()));
    }
    /// Puts the standard error back, also when `f` panics.
    struct Restore(i32);
    impl Drop for Restore {
        fn drop(&mut self) {
            // SAFETY: `self.0` is the saved standard error, owned here.
            unsafe {
                libc::dup2(self.0, 2);
                libc::close(self.0);
            }
        }
    }
    let restore = Restore(saved);
    // SAFETY: as above.
    if unsafe { libc::dup2(file.as_raw_fd(), 2) } < 0 {
        drop(restore);
        return (f(), Err("cannot redirect the standard error".to_owned()));
    }
    let result = f();
    drop(restore);
    let mut file = file;
    let mut text = String::new();
    use std::io::{Read, Seek};
    let read = file
        .seek(std::io::SeekFrom::Start(0))
        .and_then(|_| file.read_to_string(&mut text))
        .map_err(|e| format!("cannot read the temporary file: {e}"));
    (result, read.map(|_| text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_stage_leaves_every_destination_untouched() {
        let directory = tempfile::tempdir().unwrap();
        let first = directory.path().join("a.txt");
        std::fs::write(&first, "old").unwrap();
        let mut transaction = Transaction::new();
        transaction.stage(&first, |w| w.write_all(b"new")).unwrap();
        let missing = directory.path().join("no/such/dir/b.txt");
        let error = transaction.stage(&missing, |w| w.write_all(b"x")).unwrap_err();
        assert!(error.contains("cannot write"), "{error}");
        drop(transaction);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "old");
        // No temporary file is left behind.
        let names: Vec<_> = std::fs::read_dir(directory.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.txt")]);
    }

    #[test]
    fn a_commit_replaces_every_destination() {
        let directory = tempfile::tempdir().unwrap();
        let paths: Vec<_> = ["a", "b"].iter().map(|n| directory.path().join(n)).collect();
        std::fs::write(&paths[0], "old").unwrap();
        let mut transaction = Transaction::new();
        for path in &paths {
            transaction.stage(path, |w| w.write_all(b"new")).unwrap();
        }
        transaction.commit().unwrap();
        for path in &paths {
            assert_eq!(std::fs::read_to_string(path).unwrap(), "new");
        }
    }

    #[test]
    fn devices_are_written_and_folders_refused_before_anything_commits() {
        let directory = tempfile::tempdir().unwrap();
        let first = directory.path().join("a.txt");
        std::fs::write(&first, "old").unwrap();
        let mut transaction = Transaction::new();
        transaction.stage(&first, |w| w.write_all(b"new")).unwrap();
        transaction
            .stage(Path::new("/dev/null"), |w| w.write_all(b"gone"))
            .unwrap();
        let error = transaction
            .stage(directory.path(), |w| w.write_all(b"x"))
            .unwrap_err();
        assert!(error.ends_with("it is a folder"), "{error}");
        drop(transaction);
        assert_eq!(std::fs::read_to_string(&first).unwrap(), "old");
        assert!(Path::new("/dev/null").exists());
    }

    #[test]
    fn links_are_followed_and_modes_kept() {
        let directory = tempfile::tempdir().unwrap();
        let target = directory.path().join("target");
        std::fs::write(&target, "old").unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
        let link = directory.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        write_file(&link, "new").unwrap();
        assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "new");
        let mode = std::fs::metadata(&target).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        // A new file gets 0o666 less the umask: at least readable by its
        // owner and by others where the umask allows, never executable.
        let fresh = directory.path().join("fresh");
        write_file(&fresh, "x").unwrap();
        let mode = std::fs::metadata(&fresh).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode & 0o600, 0o600, "{mode:o}");
        assert_eq!(mode & 0o111, 0, "{mode:o}");
    }

    #[test]
    fn locked_updates_from_threads_are_all_kept() {
        let directory = tempfile::tempdir().unwrap();
        let path = directory.path().join("count");
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let path = path.clone();
                std::thread::spawn(move || {
                    update_locked(&path, |text| {
                        let n: u32 = text.map_or(0, |t| t.trim().parse().unwrap());
                        Ok((n + 1).to_string())
                    })
                    .unwrap()
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "8");
    }
}
