//! `jitc cache`: the disk cache of compiled code.

use crate::run::{Backend, ProgramArgs};
use clap::{Args, Subcommand};
use jitc_runtime::{
    cpu,
    disk_cache::{DiskCache, Nearest},
};
use melior::Context;
use std::process::ExitCode;

/// Manage the disk cache of compiled code.
///
/// `jitc run`, `jitc bench` and the runtime keep the CPU code they compile
/// in a cache on disk, shared by every process of this build of jitc: a
/// program compiled once loads its native code in later processes, with no
/// MLIR or LLVM pass run. The cache lives in `$JITC_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/jitc`, else `~/.cache/jitc`; `JITC_CACHE=0` (or `off`)
/// turns it off, and `JITC_CACHE_MAX_BYTES` bounds its size (bytes, or with
/// K, M or G; 1G by default; the entries used least recently go first).
///
/// An entry is keyed by a hash of the program's canonical IR (with its
/// locations), the options, the entry function, the CPU and its features,
/// the LLVM version and this build of jitc, so it cannot go stale. Each
/// entry carries a checksum: a corrupt, truncated or foreign entry is
/// reported, removed and rebuilt, never loaded. The directory is private to
/// the user; one that others can write is not used.
#[derive(Debug, Args)]
#[command(
    after_long_help = "Examples:\n  jitc cache stats\n  jitc cache explain examples/softmax.mlir --math exact\n  JITC_CACHE_DIR=/tmp/c jitc run examples/sigmoid.mlir --input 1024xf32=1 --timings"
)]
pub struct CacheArgs {
    #[command(subcommand)]
    command: CacheCommand,
}

#[derive(Debug, Subcommand)]
enum CacheCommand {
    /// Print the cache's directory.
    Dir,
    /// Print the number of entries, their size, and the hits and misses
    /// counted since the cache was last cleared.
    Stats,
    /// Remove every entry and reset the counts.
    Clear,
    /// Say whether `jitc run FILE` with these flags would load its code
    /// from the cache; on a miss, say which part of the key differs from
    /// the nearest entry.
    Explain(Box<ProgramArgs>),
}

/// Runs `jitc cache`.
pub fn run(context: &Context, args: CacheArgs) -> ExitCode {
    match cache(context, args) {
        Ok(text) => match crate::output::print(text) {
            Ok(()) => ExitCode::SUCCESS,
            Err(message) => {
                eprintln!("jitc cache: error: {message}");
                ExitCode::FAILURE
            }
        },
        Err(message) => {
            eprintln!("jitc cache: error: {message}");
            ExitCode::FAILURE
        }
    }
}

fn cache(context: &Context, args: CacheArgs) -> Result<String, String> {
    let Some(cache) = cpu::disk_cache() else {
        return Err(if jitc_runtime::disk_cache::turned_off() {
            format!(
                "the disk cache is off (JITC_CACHE={})",
                std::env::var("JITC_CACHE").unwrap_or_default()
            )
        } else {
            "no directory for the disk cache: set JITC_CACHE_DIR (or HOME)".into()
        });
    };
    match args.command {
        CacheCommand::Dir => Ok(format!("{}\n", cache.dir().display())),
        CacheCommand::Stats => {
            let stats = cache.stats();
            Ok(format!(
                "directory: {}\nentries: {}\nbytes: {}\nhits: {}\nmisses: {}\n",
                cache.dir().display(),
                stats.entries,
                stats.bytes,
                stats.hits,
                stats.misses
            ))
        }
        CacheCommand::Clear => {
            let removed = cache.clear()?;
            Ok(format!(
                "removed {removed} entries from {}\n",
                cache.dir().display()
            ))
        }
        CacheCommand::Explain(program) => explain(context, &cache, &program),
    }
}

fn explain(context: &Context, cache: &DiskCache, program: &ProgramArgs) -> Result<String, String> {
    if program.backend != Backend::Cpu {
        return Err(format!(
            "the disk cache holds CPU code; --backend {} does not use it",
            program.backend.name()
        ));
    }
    let module = crate::input::load_module(context, &program.file)?;
    // The key is the module's, whichever function runs (`jitc run` compiles
    // them all), but a function that `jitc run` would refuse is refused.
    crate::run::runnable(&module, &program.function)?;
    let key = cpu::disk_key(&module, &program.codegen_options(), None);
    let file = program.file.display();
    Ok(match cache.nearest(&key) {
        Nearest::Same => format!("hit: {file} would load its code from {}\n", cache.dir().display()),
        Nearest::Nothing => format!(
            "miss: {file} would be compiled; the cache in {} has no entry\n",
            cache.dir().display()
        ),
        Nearest::Entry(path, nearest) => {
            let differences = key.differences(&nearest);
            let mut text = format!(
                "miss: {file} would be compiled; the nearest entry, {}, differs in {} part{}:\n",
                path.display(),
                differences.len(),
                if differences.len() == 1 { "" } else { "s" }
            );
            for difference in differences {
                text.push_str(&format!("  - {difference}\n"));
            }
            text
        }
    })
}
