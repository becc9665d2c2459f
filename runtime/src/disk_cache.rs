//! The persistent compilation cache: compiled CPU kernels on disk, shared
//! by every process of this build of jitc.
//!
//! - **Where.** `$JITC_CACHE_DIR`, else `$XDG_CACHE_HOME/jitc`, else
//!   `~/.cache/jitc`. `JITC_CACHE=0` (or `off`, `false`, `no`) turns it
//!   off.
//! - **Key.** A BLAKE3 hash of [`KeyParts`]: the module's canonical text
//!   before fusion, with its locations (which compiled code reports) and
//!   its assumptions (guards are ops), the entry
//!   function whose guards were taken out, the code generation options,
//!   the CPU and its features, the LLVM version and this build of jitc
//!   (`JITC_BUILD_ID`, a hash of the compiler's sources).
//! - **Value.** One file per key: a magic line, the BLAKE3 checksum of
//!   the rest, a JSON header (the key's parts, the fused module, the
//!   kernels' signatures, the kernels left to the interpreter, the entry
//!   guards) and the object code. A hit loads the object with no MLIR or
//!   LLVM pass run.
//! - **Writes** go to a temporary file in the directory, are synced, and
//!   renamed over the entry: a reader sees a whole entry or none, and two
//!   processes that store one key both succeed (the entries are the same).
//! - **Integrity.** A short, corrupt or foreign entry (the checksum, the
//!   header or the key does not match) is reported once per process as a
//!   warning, removed, and rebuilt; it is never loaded.
//! - **Size.** At most `JITC_CACHE_MAX_BYTES` (bytes, or with `K`, `M`,
//!   `G`; 1 GiB by default): after a
//!   store, the entries used least recently (by modification time, which a
//!   hit renews) are removed until the rest fit.
//! - **Trust.** Entries are code that runs in the process: the directory
//!   is created private to the user (mode 0700), and one that belongs to
//!   someone else or that others can write is not used (a warning says
//!   so); the checksum detects damage, not tampering.
//! - **Fault injection.** In debug builds, `JITC_CACHE_FAULT=abort-mid-write`
//!   kills the process in the middle of writing an entry (for the tests).
//! - **Counts.** Each lookup appends one byte (`h` or `m`) to the file
//!   `events`, which `jitc cache stats` counts.

use jitc_compiler::{CodegenOptions, CpuArtifact, EntryGuard, KernelSignature, blake3_hex};
use serde::{Deserialize, Serialize};
use std::{
    collections::HashSet,
    fs,
    io::Write,
    path::{Path, PathBuf},
    sync::{Mutex, OnceLock},
    time::SystemTime,
};

/// The first bytes of every entry (the format's version is its last).
const MAGIC: &[u8; 12] = b"JITC-CACHE1\n";
/// The checksum's length (BLAKE3, as hex).
const CHECKSUM: usize = 64;
/// The file name ending of entries.
const ENTRY: &str = "entry";
/// The default size limit.
const DEFAULT_MAX_BYTES: u64 = 1 << 30;

/// Everything that decides the compiled code, each part kept readable so
/// that a miss can be explained ([`KeyParts::differences`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyParts {
    /// BLAKE3 of the module's canonical text before fusion, with its
    /// locations.
    pub ir: String,
    /// The entry function whose guards were taken out, if any.
    pub entry: Option<String>,
    /// The code generation options.
    pub options: String,
    /// The CPU the code is for.
    pub cpu: String,
    /// Its LLVM target features.
    pub features: String,
    /// The LLVM version.
    pub llvm: String,
    /// This build of jitc.
    pub jitc: String,
}

impl KeyParts {
    /// The parts of the key of `module_text` (printed before fusion)
    /// compiled with `options` for `entry`.
    pub fn new(module_text: &str, options: &CodegenOptions, entry: Option<&str>) -> Self {
        let (cpu, features) = options.target.resolved();
        KeyParts {
            ir: blake3_hex(&[module_text.as_bytes()]),
            entry: entry.map(str::to_owned),
            options: format!("{options:?}"),
            cpu,
            features,
            llvm: jitc_compiler::llvm_version(),
            jitc: build_id().to_owned(),
        }
    }

    /// The key: a hash of every part.
    pub fn digest(&self) -> String {
        let text = serde_json::to_string(self).unwrap_or_default();
        blake3_hex(&[text.as_bytes()])
    }

    /// What differs between `self` and `other`, in words, one part each
    /// (features as the ones added and removed).
    pub fn differences(&self, other: &KeyParts) -> Vec<String> {
        let mut out = Vec::new();
        if self.ir != other.ir {
            out.push("the program differs (its canonical IR, with its assumptions and locations)".to_owned());
        }
        if self.entry != other.entry {
            out.push(format!(
                "the entry whose guards were taken out differs: {} here, {} there",
                self.entry.as_deref().unwrap_or("none"),
                other.entry.as_deref().unwrap_or("none")
            ));
        }
        if self.options != other.options {
            // The options are printed as Rust prints them: name the fields
            // that differ, not the whole text.
            let fields = |text: &'_ str| -> Vec<String> {
                text.split([',', '{', '}'])
                    .map(str::trim)
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned)
                    .collect()
            };
            let (ours, theirs) = (fields(&self.options), fields(&other.options));
            let changed: Vec<(String, String)> = ours
                .iter()
                .zip(&theirs)
                .filter(|(a, b)| a != b)
                .map(|(a, b)| (a.clone(), b.clone()))
                .collect();
            if changed.is_empty() || ours.len() != theirs.len() {
                out.push(format!(
                    "the options differ: {} here, {} there",
                    self.options, other.options
                ));
            } else {
                let (here, there): (Vec<String>, Vec<String>) = changed.into_iter().unzip();
                out.push(format!(
                    "the options differ: {} here, {} there",
                    here.join(", "),
                    there.join(", ")
                ));
            }
        }
        if self.cpu != other.cpu {
            out.push(format!("the CPU differs: {} here, {} there", self.cpu, other.cpu));
        }
        if self.features != other.features {
            let ours: HashSet<&str> = self.features.split(',').collect();
            let theirs: HashSet<&str> = other.features.split(',').collect();
            let mut only: Vec<&str> = ours.difference(&theirs).copied().collect();
            let mut missing: Vec<&str> = theirs.difference(&ours).copied().collect();
            only.sort_unstable();
            missing.sort_unstable();
            out.push(format!(
                "CPU features differ: {} here, {} there",
                if only.is_empty() {
                    "none".to_owned()
                } else {
                    only.join(",")
                },
                if missing.is_empty() {
                    "none".to_owned()
                } else {
                    missing.join(",")
                }
            ));
        }
        if self.llvm != other.llvm {
            out.push(format!(
                "the LLVM version differs: {} here, {} there",
                self.llvm, other.llvm
            ));
        }
        if self.jitc != other.jitc {
            out.push(format!(
                "the jitc build differs: {} here, {} there",
                self.jitc, other.jitc
            ));
        }
        out
    }
}

/// This build of jitc: its version and a hash of its compiler's sources.
pub fn build_id() -> &'static str {
    env!("JITC_BUILD_ID")
}

/// What an entry holds besides its object code.
#[derive(Debug, Serialize, Deserialize)]
struct Header {
    key: KeyParts,
    fused: String,
    signatures: Vec<KernelSignature>,
    skipped: Vec<(String, String)>,
    entry_guards: Vec<EntryGuard>,
    /// The length of each object, in the order they follow the header.
    object_lens: Vec<usize>,
}

/// A compilation read back from the cache.
pub struct Hit {
    /// The fused module, as text.
    pub fused: String,
    /// The kernels, loaded.
    pub kernels: CpuArtifact,
}

/// The cache on disk.
#[derive(Debug, Clone)]
pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
}

/// Counts of the cache's contents and use.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Stats {
    /// Entries.
    pub entries: usize,
    /// Their total size in bytes.
    pub bytes: u64,
    /// Lookups that loaded an entry.
    pub hits: u64,
    /// Lookups that found none (or a bad one).
    pub misses: u64,
}

impl DiskCache {
    /// The cache the environment names: `JITC_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/jitc`, else `$HOME/.cache/jitc`; `None` when
    /// `JITC_CACHE` turns it off ([`turned_off`]) or no directory can be
    /// named. A `JITC_CACHE_MAX_BYTES` that is not a number of bytes
    /// (digits, or digits followed by K, M or G) is reported once and the
    /// default kept.
    pub fn from_env() -> Option<Self> {
        if turned_off() {
            return None;
        }
        let nonempty = |key: &str| std::env::var_os(key).filter(|v| !v.is_empty()).map(PathBuf::from);
        let dir = nonempty("JITC_CACHE_DIR")
            .or_else(|| nonempty("XDG_CACHE_HOME").map(|d| d.join("jitc")))
            .or_else(|| nonempty("HOME").map(|d| d.join(".cache").join("jitc")))?;
        let max_bytes = match std::env::var("JITC_CACHE_MAX_BYTES") {
            Err(_) => DEFAULT_MAX_BYTES,
            Ok(text) => parse_size(&text).unwrap_or_else(|| {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!(
                        "jitc: warning: JITC_CACHE_MAX_BYTES='{text}' is not a size (bytes, or a number with K, M or G); the cache keeps its default limit of 1G"
                    );
                });
                DEFAULT_MAX_BYTES
            }),
        };
        Some(Self::new(dir, max_bytes))
    }

    /// A cache in `dir` of at most `max_bytes`.
    pub fn new(dir: PathBuf, max_bytes: u64) -> Self {
        DiskCache { dir, max_bytes }
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, digest: &str) -> PathBuf {
        self.dir.join(format!("{digest}.{ENTRY}"))
    }

    /// The compilation stored under `key`, loaded; `None` on a miss. A bad
    /// entry is reported (once per process), removed and counted as a
    /// miss.
    pub fn load(&self, key: &KeyParts) -> Option<Hit> {
        if let Err(problem) = self.trusted() {
            warn_once(
                &self.dir,
                format!(
                    "jitc: warning: the cache directory {} {problem}",
                    self.dir.display()
                ),
            );
            return None;
        }
        let path = self.path(&key.digest());
        let hit = match jitc_compiler::timings::phase("read the disk cache", || fs::read(&path)) {
            Err(_) => None,
            Ok(bytes) => match decode(&bytes, key) {
                Ok(hit) => Some(hit),
                Err(problem) => {
                    warn_once(
                        &path,
                        format!(
                            "jitc: warning: the cache entry {} {problem}; it was removed and is rebuilt",
                            path.display()
                        ),
                    );
                    let _ = fs::remove_file(&path);
                    None
                }
            },
        };
        if hit.is_some() {
            // The modification time is the entry's last use, for eviction.
            let _ = fs::File::options()
                .append(true)
                .open(&path)
                .and_then(|f| f.set_modified(SystemTime::now()));
        }
        self.count(if hit.is_some() { b'h' } else { b'm' });
        hit
    }

    /// Stores `kernels` (compiled from the module whose key is `key`, fused
    /// into `fused`). Failures are returned for the caller to report; the
    /// cache stays consistent whatever happens.
    pub fn store(&self, key: &KeyParts, fused: &str, kernels: &CpuArtifact) -> Result<(), String> {
        let mut signatures: Vec<KernelSignature> = kernels.signatures().cloned().collect();
        signatures.sort_by(|a, b| a.name.cmp(&b.name));
        let header = Header {
            key: key.clone(),
            fused: fused.to_owned(),
            signatures,
            skipped: kernels.skipped.clone(),
            entry_guards: kernels.entry_guards.clone(),
            object_lens: kernels.objects().iter().map(Vec::len).collect(),
        };
        let header = serde_json::to_vec(&header).map_err(|e| e.to_string())?;
        let length = (header.len() as u64).to_le_bytes();
        let objects = kernels.objects().concat();
        let checksum = blake3_hex(&[&length, &header, &objects]);
        create_private_dir(&self.dir).map_err(|e| format!("cannot create {}: {e}", self.dir.display()))?;
        if self.trusted().is_err() {
            // `load` said why, once.
            return Ok(());
        }
        let mut file = tempfile::NamedTempFile::new_in(&self.dir)
            .map_err(|e| format!("cannot write in {}: {e}", self.dir.display()))?;
        let parts = [&MAGIC[..], checksum.as_bytes(), &length, &header, &objects];
        for (_k, part) in parts.iter().enumerate() {
            file.write_all(part).map_err(|e| e.to_string())?;
            // Fault injection for the tests, in debug builds only: the
            // process dies in the middle of writing an entry.
            #[cfg(debug_assertions)]
            if _k == 3 && std::env::var_os("JITC_CACHE_FAULT").is_some_and(|v| v == "abort-mid-write") {
                let _ = file.as_file().sync_all();
                std::process::abort();
            }
        }
        file.as_file().sync_all().map_err(|e| e.to_string())?;
        let path = self.path(&key.digest());
        file.persist(&path).map_err(|e| e.to_string())?;
        self.evict(&path);
        self.remove_strays(Some(SystemTime::now() - std::time::Duration::from_secs(3600)));
        Ok(())
    }

    /// `Ok` when the directory, if it exists, is this user's and nobody
    /// else can write in it: its entries are code the process runs, and
    /// keys can be computed from public inputs, so an entry planted by
    /// someone else would run as this user.
    fn trusted(&self) -> Result<(), String> {
        use std::os::unix::fs::MetadataExt;
        let Ok(meta) = fs::metadata(&self.dir) else {
            return Ok(());
        };
        // SAFETY: `geteuid` reads the process's effective user id.
        let me = unsafe { libc::geteuid() };
        if meta.uid() != me || meta.mode() & 0o022 != 0 {
            return Err(format!(
                "is a directory of user {} with mode {:o}; jitc runs the code a cache holds, so it uses only a directory of its own user that nobody else can write (the cache is off for this process)",
                meta.uid(),
                meta.mode() & 0o7777
            ));
        }
        Ok(())
    }

    /// Removes the temporary files writers left, those last written before
    /// `before` (a store passes an hour ago: a live writer's file is
    /// younger, it writes for milliseconds), or all of them.
    fn remove_strays(&self, before: Option<SystemTime>) {
        for stray in fs::read_dir(&self.dir).into_iter().flatten().flatten() {
            let old = before.is_none_or(|before| {
                stray
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|modified| modified < before)
            });
            if old && stray.file_name().to_string_lossy().starts_with(".tmp") {
                let _ = fs::remove_file(stray.path());
            }
        }
    }

    /// Removes the entries used least recently until the rest fit the
    /// limit; `keep` stays.
    fn evict(&self, keep: &Path) {
        let mut entries = self.entries();
        let mut total: u64 = entries.iter().map(|(_, size, _)| size).sum();
        if total <= self.max_bytes {
            return;
        }
        entries.sort_by_key(|(_, _, used)| *used);
        for (path, size, _) in entries {
            if total <= self.max_bytes {
                break;
            }
            if path != keep && fs::remove_file(&path).is_ok() {
                total -= size;
            }
        }
    }

    /// Every entry: its path, size and last use.
    fn entries(&self) -> Vec<(PathBuf, u64, SystemTime)> {
        let Ok(dir) = fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        dir.flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == ENTRY))
            .filter_map(|e| {
                let meta = e.metadata().ok()?;
                Some((e.path(), meta.len(), meta.modified().ok()?))
            })
            .collect()
    }

    fn count(&self, event: u8) {
        let _ = create_private_dir(&self.dir);
        // One byte per append: appends of one write are atomic, so
        // processes that count at once lose nothing.
        let _ = fs::File::options()
            .create(true)
            .append(true)
            .open(self.dir.join("events"))
            .and_then(|mut f| f.write_all(&[event]));
    }

    /// Entries, bytes, hits and misses.
    pub fn stats(&self) -> Stats {
        let entries = self.entries();
        let events = fs::read(self.dir.join("events")).unwrap_or_default();
        Stats {
            entries: entries.len(),
            bytes: entries.iter().map(|(_, size, _)| size).sum(),
            hits: events.iter().filter(|&&e| e == b'h').count() as u64,
            misses: events.iter().filter(|&&e| e == b'm').count() as u64,
        }
    }

    /// Removes every entry, the counts, and what writers that died left
    /// (their temporary files); returns how many entries there were.
    pub fn clear(&self) -> Result<usize, String> {
        let entries = self.entries();
        for (path, _, _) in &entries {
            fs::remove_file(path).map_err(|e| format!("cannot remove {}: {e}", path.display()))?;
        }
        self.remove_strays(None);
        match fs::remove_file(self.dir.join("events")) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                return Err(format!("cannot reset the counts: {e}"));
            }
            _ => {}
        }
        Ok(entries.len())
    }

    /// Whether `key` has an entry (without loading or counting it), and
    /// otherwise the key of the stored entry that differs from it in the
    /// fewest parts, with its path.
    pub fn nearest(&self, key: &KeyParts) -> Nearest {
        let wanted = self.path(&key.digest());
        let mut best: Option<(usize, PathBuf, KeyParts)> = None;
        for (path, _, _) in self.entries() {
            let Some(parts) = fs::read(&path)
                .ok()
                .and_then(|b| read_header(&b).ok())
                .map(|h| h.key)
            else {
                continue;
            };
            if path == wanted && parts == *key {
                return Nearest::Same;
            }
            let distance = key.differences(&parts).len();
            if best.as_ref().is_none_or(|(d, _, _)| distance < *d) {
                best = Some((distance, path, parts));
            }
        }
        match best {
            Some((_, path, parts)) => Nearest::Entry(path, parts),
            None => Nearest::Nothing,
        }
    }
}

/// Whether `JITC_CACHE` turns the disk cache off: `0`, `off`, `false` or
/// `no`, in any case.
pub fn turned_off() -> bool {
    std::env::var("JITC_CACHE")
        .is_ok_and(|v| ["0", "off", "false", "no"].contains(&v.trim().to_ascii_lowercase().as_str()))
}

/// A size in bytes: digits, optionally followed by `K`, `M` or `G`
/// (powers of 1024).
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (at, c) if c.is_ascii_alphabetic() => (&text[..at], c.to_ascii_uppercase()),
        _ => (text, 'B'),
    };
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        _ => return None,
    };
    let number: u64 = digits.trim().parse().ok()?;
    number.checked_mul(1u64 << shift)
}

/// The entry nearest a key ([`DiskCache::nearest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Nearest {
    /// The key's own entry.
    Same,
    /// The entry whose key differs in the fewest parts: its path and key.
    Entry(PathBuf, KeyParts),
    /// No entry at all.
    Nothing,
}

/// Reads an entry's header after checking its magic and checksum.
fn read_header(bytes: &[u8]) -> Result<Header, String> {
    let rest = bytes
        .strip_prefix(&MAGIC[..])
        .ok_or("is not a jitc cache entry of this format")?;
    if rest.len() < CHECKSUM + 8 {
        return Err("is truncated".into());
    }
    let (checksum, body) = rest.split_at(CHECKSUM);
    if blake3_hex(&[body]).as_bytes() != checksum {
        return Err("fails its checksum (it is corrupt or truncated)".into());
    }
    let (length, body) = body.split_at(8);
    let length = u64::from_le_bytes(length.try_into().map_err(|_| "is truncated")?);
    let length = usize::try_from(length)
        .ok()
        .filter(|&l| l <= body.len())
        .ok_or("is truncated")?;
    let header: Header =
        serde_json::from_slice(&body[..length]).map_err(|e| format!("has a header jitc cannot read: {e}"))?;
    let objects = header
        .object_lens
        .iter()
        .try_fold(0usize, |total, &len| total.checked_add(len));
    if objects != Some(body.len() - length) {
        return Err("is truncated".into());
    }
    Ok(header)
}

/// Loads an entry read from disk, checking that it is whole and is the
/// entry of `key`.
fn decode(bytes: &[u8], key: &KeyParts) -> Result<Hit, String> {
    let header = jitc_compiler::timings::phase("check the entry", || read_header(bytes))?;
    if header.key != *key {
        return Err("belongs to another key (a foreign entry)".into());
    }
    let mut rest = &bytes[bytes.len() - header.object_lens.iter().sum::<usize>()..];
    let mut objects = Vec::new();
    for &len in &header.object_lens {
        let (object, after) = rest.split_at(len);
        objects.push(object.to_vec());
        rest = after;
    }
    // A loaded artifact has no LLVM IR: none was made.
    let kernels = jitc_compiler::timings::phase("load the object code", || {
        CpuArtifact::load(objects, header.signatures, header.skipped, header.entry_guards)
    })
    .map_err(|e| format!("holds object code that does not load: {e}"))?;
    Ok(Hit {
        fused: header.fused,
        kernels,
    })
}

/// Creates `dir` (and its parents) readable and writable by this user
/// only, when it does not exist: its entries are code this process runs.
fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new().recursive(true).mode(0o700).create(dir)
}

/// Prints `message` about a bad entry or directory, once per path and
/// process.
fn warn_once(path: &Path, message: String) {
    static WARNED: OnceLock<Mutex<HashSet<PathBuf>>> = OnceLock::new();
    let first = WARNED
        .get_or_init(Mutex::default)
        .lock()
        .map(|mut w| w.insert(path.to_owned()))
        .unwrap_or(true);
    if first {
        eprintln!("{message}");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn sizes_are_bytes_or_binary_multiples() {
        use super::parse_size;
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("2m"), Some(2 << 20));
        assert_eq!(parse_size(" 1G "), Some(1 << 30));
        for bad in ["", "G", "-1", "1.5G", "10T", "lots", "99999999999999999999G"] {
            assert_eq!(parse_size(bad), None, "{bad}");
        }
    }
}
