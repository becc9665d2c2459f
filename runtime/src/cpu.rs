//! Running modules on the CPU with compiled kernels.
//!
//! Each kernel call gets a zeroed status record ([`KernelStatus`]); a part
//! of a split kernel gets its own, and the first part (in range order)
//! that failed is reported, worded by [`jitc_compiler::KernelSignature::failure`]
//! as on the GPU: a division by zero, or in the bounds-checked mode
//! ([`CodegenOptions::check_bounds`]) the access that went out of bounds.

use crate::{
    Error, Executor, KernelTime,
    disk_cache::{DiskCache, KeyParts},
    host::{Compiled, HostKernels, HostPlan, compiled_or_skipped, run_host_code},
    lru::Lru,
};
use jitc_compiler::Fingerprint;
use jitc_compiler::{
    CodegenOptions, CpuArtifact, DynamicSizes, EntryGuard, Extent, KernelFn, KernelStatus, SizeSource, Slot,
};
use jitc_dialect::profile::Profile;
use jitc_interp::{KernelRunner, StateStore, Tensor, Value};
use melior::{
    Context,
    ir::{Module, operation::OperationPrintingFlags},
};
use std::{
    cell::{Cell, RefCell},
    collections::{BTreeMap, HashMap},
    hash::Hash,
    sync::{
        Arc, Mutex, OnceLock,
        atomic::{AtomicBool, AtomicU64, Ordering},
    },
    time::Instant,
};

pub mod affinity;
#[cfg(test)]
mod device_tests;
mod team;

/// Kernels with fewer domain points than this run on one thread: handing
/// out work would cost more than the work.
pub const PARALLEL_MIN_ELEMENTS: usize = 1 << 15;

/// A kernel is split across the worker threads only when a call is
/// expected to take at least this long on one thread (nanoseconds): waking
/// the workers costs tens of microseconds on this class of machine, so a
/// shorter kernel runs faster alone (measured: IndRNN's 65,536-point step
/// kernel takes 2 µs alone and 15 µs split).
pub const SPLIT_MIN_NANOS: u64 = 50_000;

/// As [`SPLIT_MIN_NANOS`], when a helper is awake (spinning for work after
/// a kernel it ran, `team`): a split then costs about a microsecond, so
/// kernels of a few microseconds (an RNN step's contractions) split too.
pub const SPLIT_AWAKE_MIN_NANOS: u64 = 8_000;

static THREAD_COUNT: OnceLock<usize> = OnceLock::new();

/// Sets [`thread_count`] for the rest of the process, before anything
/// has asked for it; `Err` holds the count already in force.
pub fn set_thread_count(threads: usize) -> Result<(), usize> {
    let threads = threads.clamp(1, MAX_THREADS);
    THREAD_COUNT.set(threads).map_err(|_| thread_count())
}

/// The most threads [`thread_count`] gives: more would be mostly stacks
/// (30,000 exhausted a 24 GiB machine's memory).
pub const MAX_THREADS: usize = 1024;

/// `JITC_NUM_THREADS` as [`thread_count`] reads it: `Ok(None)` when it is
/// not set, the count asked for when it is a positive integer (of which
/// [`thread_count`] uses at most [`MAX_THREADS`]), and why not otherwise
/// (tools report it; the library then uses every core).
pub fn configured_thread_count() -> Result<Option<usize>, String> {
    let Some(value) = std::env::var_os("JITC_NUM_THREADS") else {
        return Ok(None);
    };
    let text = value.to_string_lossy();
    match text.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(Some(n)),
        _ => Err(format!(
            "JITC_NUM_THREADS must be a positive integer (threads, at most {MAX_THREADS} are used), not '{text}'"
        )),
    }
}

/// Threads a kernel's outermost loop is split across: `JITC_NUM_THREADS`
/// (at most [`MAX_THREADS`]), or every core. Read once per process: every
/// kernel call asks, and counting the cores reads cgroup files (tens of
/// microseconds).
pub fn thread_count() -> usize {
    *THREAD_COUNT.get_or_init(|| {
        configured_thread_count()
            .ok()
            .flatten()
            .map(|n| n.min(MAX_THREADS))
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
    })
}

/// Data pointers handed to worker threads.
struct Buffers(Vec<*mut u8>);

impl Buffers {
    /// The pointers (a method, so a closure captures the whole `Sync`
    /// wrapper rather than its field).
    fn pointers(&self) -> &[*mut u8] {
        &self.0
    }
}

// SAFETY: the pointers are only dereferenced by kernel code while the
// buffers they point to are alive (the caller blocks until every part has
// run), and parts of a parallel kernel write disjoint elements.
unsafe impl Send for Buffers {}
// SAFETY: as above; the vector itself is only read.
unsafe impl Sync for Buffers {}

/// The process's worker team: the calling thread and [`thread_count`] − 1
/// helpers, started on first use and kept for the life of the process
/// (`JITC_NUM_THREADS` and `JITC_PIN_THREADS` are read once). Each helper
/// is pinned to a CPU of its own where there are enough (see `affinity`):
/// the second allowed CPU, the third, and so on; the caller is not pinned.
fn team() -> Option<&'static team::Team> {
    static TEAM: OnceLock<Option<&'static team::Team>> = OnceLock::new();
    *TEAM.get_or_init(|| {
        let threads = thread_count();
        let wanted = affinity::wanted(std::env::var("JITC_PIN_THREADS").ok().as_deref());
        let cpus = affinity::plan(threads, &affinity::allowed_cpus(), wanted).map(|cpus| cpus[1..].to_vec());
        team::Team::start(threads.saturating_sub(1), cpus)
    })
}

/// The CPUs each helper thread may run on, as each helper read its own
/// affinity mask (starting the helpers if they have not started): one
/// CPU each, all different, when they are pinned; empty when there are no
/// helpers (one thread) or they could not be started.
pub fn worker_cpus() -> Vec<Vec<usize>> {
    team().map_or_else(Vec::new, |team| team.masks())
}

/// Runs `[begin, end)` of `function` with its own status record in place
/// of the last pointer; returns that record.
fn run_part(function: KernelFn, pointers: &[*mut u8], begin: i64, end: i64) -> KernelStatus {
    let mut own = pointers.to_vec();
    let mut status: KernelStatus = [0; 2];
    if let Some(last) = own.last_mut() {
        *last = status.as_mut_ptr().cast();
    }
    // SAFETY: as for a whole-range call in `run_kernel`; a part writes only
    // the outputs of its range of the split dimension.
    unsafe { function(own.as_ptr(), begin, end) };
    status
}

/// Runs a parallel kernel in `parts` contiguous ranges of its split
/// dimension on the worker threads; returns the status record of the
/// first part that failed, or a zero one. Falls back to one call when the
/// pool could not be started.
fn run_split(function: KernelFn, pointers: &[*mut u8], outer: i64, parts: usize) -> KernelStatus {
    let Some(team) = team() else {
        return run_part(function, pointers, 0, outer);
    };
    let shared = Buffers(pointers.to_vec());
    let ranges = part_ranges(outer, parts);
    first_failure(team.map(ranges.len(), &|p| {
        let (begin, end) = ranges[p];
        if begin < end {
            run_part(function, shared.pointers(), begin, end)
        } else {
            [0; 2]
        }
    }))
}

/// `[0, outer)` cut into `parts` contiguous ranges of equal length but
/// the last; a range past the end is empty (`begin == end`).
fn part_ranges(outer: i64, parts: usize) -> Vec<(i64, i64)> {
    let per_part = (outer.max(0) as usize).div_ceil(parts.max(1)) as i64;
    (0..parts as i64)
        .map(|t| {
            let begin = (t * per_part).min(outer);
            (begin, ((t + 1) * per_part).min(outer))
        })
        .collect()
}

/// The status record of the first part (in range order) that failed, or a
/// zero one.
fn first_failure(statuses: Vec<KernelStatus>) -> KernelStatus {
    statuses
        .into_iter()
        .find(|status| status[0] != 0)
        .unwrap_or_default()
}

/// Runs a kernel that is not parallel but may run in parts
/// ([`jitc_compiler::KernelSignature::partial`]) in `parts` contiguous
/// ranges of its split dimension: part 0 into `outputs` (whose buffers
/// `pointers` holds from slot `first_output`), the others into buffers of
/// their own; then combines each output's parts in part order with its
/// kind, so a given number of parts always gives the same result. Returns
/// the status record of the first part that failed, or a zero one.
fn run_partial(
    function: KernelFn,
    pointers: &[*mut u8],
    first_output: usize,
    outputs: &mut [Tensor],
    kinds: &[jitc_dialect::kinds::ReduceKind],
    outer: i64,
    parts: usize,
) -> Result<KernelStatus, String> {
    let Some(team) = team() else {
        return Ok(run_part(function, pointers, 0, outer));
    };
    let parts = parts.min(outer.max(1) as usize).max(1);
    let mut extra: Vec<Vec<Tensor>> = Vec::with_capacity(parts - 1);
    for _ in 1..parts {
        let set = outputs
            .iter()
            .map(|t| Tensor::for_overwrite(t.shape().to_vec(), t.element_type()))
            .collect::<Result<Vec<_>, _>>()?;
        extra.push(set);
    }
    let mut arrays = vec![Buffers(pointers.to_vec())];
    for set in &mut extra {
        let mut own = pointers.to_vec();
        for (j, tensor) in set.iter_mut().enumerate() {
            own[first_output + j] = tensor.buffer_mut().as_mut_ptr();
        }
        arrays.push(Buffers(own));
    }
    let arrays = &arrays;
    // Every part runs, an empty one too: its buffers must hold the
    // identity, which a call over an empty range writes.
    let ranges = part_ranges(outer, parts);
    let failed = first_failure(team.map(ranges.len(), &|t| {
        let (begin, end) = ranges[t];
        run_part(function, arrays[t].pointers(), begin, end)
    }));
    if failed[0] != 0 {
        return Ok(failed);
    }
    for (j, kind) in kinds.iter().enumerate() {
        for set in &extra {
            for e in 0..outputs[j].len() {
                let value = jitc_interp::scalar::reduce(*kind, outputs[j].get(e), set[j].get(e))
                    .map_err(|e| format!("combining the parts of a reduction: {e:?}"))?;
                outputs[j].buffer_mut().set(e, value);
            }
        }
    }
    Ok([0; 2])
}

/// The sizes of a call of a kernel over a dynamic domain, from its
/// arguments `args`: the domain's, then each output's, as the kernel reads
/// them ([`jitc_compiler::KernelSignature::sizes_slot`]). `None` when the
/// call cannot run natively: the sources of a size disagree (two values of
/// the domain's type have different sizes), a size is negative, or a tensor
/// of these sizes would be more than one may hold. The interpreter then
/// runs the call, which gives the exact result or error.
fn call_sizes(sizes: &DynamicSizes, args: &[Value]) -> Option<Vec<i64>> {
    let read = |source: &SizeSource| -> Option<i64> {
        match (source, args.get(source.input())?) {
            (SizeSource::Dim { dim, .. }, Value::Tensor(tensor)) => {
                tensor.shape().get(*dim).map(|&n| n as i64)
            }
            (SizeSource::Index { .. }, Value::Index(i)) => Some(*i),
            _ => None,
        }
    };
    let extent = |extent: &Extent| -> Option<usize> {
        match extent {
            Extent::Static(n) => Some(*n),
            Extent::Dynamic(sources) => {
                let first = read(sources.first()?)?;
                let agree = sources[1..].iter().all(|s| read(s) == Some(first));
                (agree && first >= 0).then_some(first as usize)
            }
        }
    };
    let mut all = Vec::new();
    for shape in std::iter::once(&sizes.domain).chain(&sizes.outputs) {
        let shape: Vec<usize> = shape.iter().map(extent).collect::<Option<_>>()?;
        jitc_interp::tensor::checked_len(&shape).ok()?;
        all.extend(shape.iter().map(|&n| n as i64));
    }
    Some(all)
}

/// Reports once per process that the disk cache could not take an entry
/// (the compilation itself succeeded and is used).
fn warn_store_failed(cache: &DiskCache, problem: &str) {
    static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    if !WARNED.swap(true, Ordering::Relaxed) {
        eprintln!(
            "jitc: warning: cannot store compiled code in the cache {}: {problem} (set JITC_CACHE=0 to turn the cache off)",
            cache.dir().display()
        );
    }
}

/// A cached compilation: the fused module's text and what every module
/// compiled from it shares.
struct Entry {
    fused: String,
    shared: Arc<Shared>,
}

/// What the [`CpuModule`]s of one compilation share: the kernels, the host
/// plans built from the fused module (they hold nothing of MLIR, and every
/// module handed out for the compilation is the same fused module), and
/// the kernels' measured speeds.
struct Shared {
    kernels: CpuArtifact,
    /// Host plans by function, built on a function's first run; `Err` is
    /// why that function runs in the interpreter.
    plans: Mutex<HashMap<String, Arc<Result<HostPlan, String>>>>,
    /// Per kernel, the fastest single-threaded call seen, in picoseconds
    /// per domain point (0: none yet): whether splitting pays is decided
    /// from it ([`SPLIT_MIN_NANOS`]).
    speeds: HashMap<String, AtomicU64>,
}

impl Shared {
    fn new(kernels: CpuArtifact) -> Arc<Self> {
        let speeds = kernels
            .names()
            .map(|name| (name.to_owned(), AtomicU64::new(0)))
            .collect();
        Arc::new(Self {
            kernels,
            plans: Mutex::default(),
            speeds,
        })
    }
}

/// The in-memory cache of compilations, keyed by the module's canonical
/// text before fusion (printed with its locations; see `with_locations`), the code generation
/// options (all of them, `check_bounds` included, so checked and unchecked
/// kernels never share an entry), the entry function whose guards were
/// taken out, and the host CPU.
/// It keeps [`cache_capacity`] compilations, the least recently used
/// dropped first (their code lives on in the modules that hold it).
fn cache() -> &'static Mutex<Lru<String, Entry>> {
    static CACHE: OnceLock<Mutex<Lru<String, Entry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(Lru::new(DEFAULT_CACHE_CAPACITY)))
}

/// Compilations the process keeps by default ([`set_cache_capacity`]).
pub const DEFAULT_CACHE_CAPACITY: usize = 512;

/// Drops every cached compilation (modules that hold one keep it).
pub fn clear_cache() {
    if let Ok(mut cache) = cache().lock() {
        cache.clear();
    }
}

/// Compiled kernels kept in the cache.
pub fn cached_compilations() -> usize {
    cache().lock().map_or(0, |c| c.len())
}

/// Makes the process's cache keep at most `capacity` compilations (at
/// least one) from now on, dropping the least recently used beyond it.
pub fn set_cache_capacity(capacity: usize) {
    if let Ok(mut cache) = cache().lock() {
        cache.set_capacity(capacity);
    }
}

/// How many compilations the process's cache keeps.
pub fn cache_capacity() -> usize {
    cache().lock().map_or(DEFAULT_CACHE_CAPACITY, |c| c.capacity())
}

fn cache_key(text: &str, options: &CodegenOptions, entry: Option<&str>) -> String {
    let host = jitc_compiler::host_description();
    format!("{options:?}\n{entry:?}\n{host}\n{text}")
}

/// The parts of the disk cache's key of `module` (before fusion) compiled
/// with `options` for `entry`: what [`CpuModule::compile_with`] looks up.
pub fn disk_key(module: &Module, options: &CodegenOptions, entry: Option<&str>) -> KeyParts {
    KeyParts::new(&with_locations(module), options, entry)
}

/// `module` printed with its locations. Keys and cached fused modules
/// keep them: they are baked into what a compilation reports (the op a
/// kernel failed at, the sites a profile names), so a hit must come from
/// the same text at the same places, and the module it brings back must
/// keep them.
fn with_locations(module: &Module) -> String {
    use melior::ir::operation::OperationLike;
    let flags = OperationPrintingFlags::new().enable_debug_info(true, false);
    let op = module.as_operation();
    op.to_string_with_flags(flags).unwrap_or_else(|_| op.to_string())
}

/// The disk cache this process uses: the one the environment names
/// ([`DiskCache::from_env`]) unless [`set_disk_cache`] chose another.
pub fn disk_cache() -> Option<DiskCache> {
    disk_cache_setting()
        .lock()
        .ok()
        .and_then(|mut setting| setting.get_or_insert_with(DiskCache::from_env).clone())
}

fn disk_cache_setting() -> &'static Mutex<Option<Option<DiskCache>>> {
    static SETTING: OnceLock<Mutex<Option<Option<DiskCache>>>> = OnceLock::new();
    SETTING.get_or_init(Mutex::default)
}

/// Makes this process use `cache` (`None`: no disk cache) from now on,
/// instead of the one the environment names.
pub fn set_disk_cache(cache: Option<DiskCache>) {
    if let Ok(mut setting) = disk_cache_setting().lock() {
        *setting = Some(cache);
    }
}

/// Compilations made in one context, each handed back as a copy of its
/// fused module: a hit costs a structural fingerprint of the module
/// ([`jitc_compiler::fingerprint`]) and a copy of the fused module, with
/// no printing, no parsing and nothing compiled. It is for callers that
/// compile equal modules again in one context, such as a frontend that
/// builds its IR in memory. It borrows the context, so what it keeps is
/// dropped before the context is. A miss goes to
/// [`CpuModule::compile_with`] (the process's cache of printed modules,
/// then the disk cache, then the compiler).
///
/// The fingerprint covers everything the printed module with its
/// locations shows, for modules of the textual contract's dialects.
pub struct CompileCache<'c> {
    context: &'c Context,
    entries: RefCell<Lru<LocalKey, Local<'c>>>,
    hits: Cell<u64>,
    misses: Cell<u64>,
}

#[derive(Clone, PartialEq, Eq, Hash)]
struct LocalKey {
    fingerprint: Fingerprint,
    options: CodegenOptions,
    entry: Option<String>,
}

struct Local<'c> {
    fused: Module<'c>,
    shared: Arc<Shared>,
}

impl<'c> CompileCache<'c> {
    /// Compilations kept by [`Self::new`]'s cache.
    pub const DEFAULT_CAPACITY: usize = 256;

    /// An empty cache for modules of `context`, keeping up to
    /// [`Self::DEFAULT_CAPACITY`] compilations.
    pub fn new(context: &'c Context) -> Self {
        Self::with_capacity(context, Self::DEFAULT_CAPACITY)
    }

    /// An empty cache keeping up to `capacity` compilations (at least one),
    /// the least recently used dropped first.
    pub fn with_capacity(context: &'c Context, capacity: usize) -> Self {
        Self {
            context,
            entries: RefCell::new(Lru::new(capacity)),
            hits: Cell::new(0),
            misses: Cell::new(0),
        }
    }

    /// Compiles served by this cache.
    pub fn hits(&self) -> u64 {
        self.hits.get()
    }

    /// Compiles this cache did not serve (those of modules it cannot keep
    /// included).
    pub fn misses(&self) -> u64 {
        self.misses.get()
    }

    /// Compilations kept.
    pub fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    /// Whether nothing is kept yet.
    pub fn is_empty(&self) -> bool {
        self.entries.borrow().len() == 0
    }

    /// [`CpuModule::compile_with`], served from this cache when an equal
    /// module was compiled in this context with the same options. A module
    /// of another context than the cache's is an error
    /// ([`Error::Graph`]). A module with an op outside `builtin`, `func`,
    /// `scf`, `arith`, `tensor` and `meta`, or with a use before its
    /// definition, has no fingerprint ([`jitc_compiler::fingerprint`]): it
    /// is compiled and not kept.
    pub fn compile(&self, module: &mut Module<'c>, options: &CodegenOptions) -> Result<CpuModule, Error> {
        self.build(module, options, None)
    }

    /// [`CpuModule::compile_entry`], served from this cache as
    /// [`Self::compile`] is.
    pub fn compile_entry(
        &self,
        module: &mut Module<'c>,
        options: &CodegenOptions,
        entry: &str,
    ) -> Result<CpuModule, Error> {
        self.build(module, options, Some(entry))
    }

    fn build(
        &self,
        module: &mut Module<'c>,
        options: &CodegenOptions,
        entry: Option<&str>,
    ) -> Result<CpuModule, Error> {
        if *self.context != module.context() {
            return Err(Error::Graph(
                "CompileCache::compile was given a module of another context than the cache's".to_owned(),
            ));
        }
        let Some(fingerprint) = jitc_compiler::fingerprint(module) else {
            // Ops whose properties the C API does not show, or a use before
            // its definition: compiled, and not kept.
            self.misses.set(self.misses.get() + 1);
            return CpuModule::build(self.context, module, options, entry);
        };
        let key = LocalKey {
            fingerprint,
            options: options.clone(),
            entry: entry.map(str::to_owned),
        };
        if let Some(local) = self.entries.borrow_mut().get(&key) {
            self.hits.set(self.hits.get() + 1);
            *module = jitc_compiler::clone_module(&local.fused);
            return Ok(CpuModule::new(Arc::clone(&local.shared), true, false));
        }
        self.misses.set(self.misses.get() + 1);
        let compiled = CpuModule::build(self.context, module, options, entry)?;
        self.entries.borrow_mut().insert(
            key,
            Local {
                fused: jitc_compiler::clone_module(module),
                shared: Arc::clone(&compiled.shared),
            },
        );
        Ok(compiled)
    }
}

/// A module whose kernels run as native code, and whose functions' host
/// code runs as host plans ([`crate::host`]) where they have one.
pub struct CpuModule {
    shared: Arc<Shared>,
    cache_hit: bool,
    disk_hit: bool,
    /// Whether kernel calls are timed ([`Executor::set_kernel_timing`]).
    timing: AtomicBool,
    /// Per kernel, its native calls and their time since timing started.
    times: Mutex<BTreeMap<String, KernelTime>>,
}

impl CpuModule {
    /// Fuses `module` (`meta-fuse`, in place) and compiles its kernels for
    /// this machine.
    pub fn compile<'c>(context: &'c Context, module: &mut Module<'c>) -> Result<Self, Error> {
        Self::compile_with(context, module, &CodegenOptions::default())
    }

    /// [`Self::compile`] with explicit code generation options.
    ///
    /// Compilations are cached in memory, keyed by the module's canonical
    /// text before fusion, the options and the host CPU. On a hit
    /// ([`Self::cache_hit`]) `module` is replaced by the cached fused module
    /// (the same text fusion would produce) and nothing is recompiled.
    pub fn compile_with<'c>(
        context: &'c Context,
        module: &mut Module<'c>,
        options: &CodegenOptions,
    ) -> Result<Self, Error> {
        Self::build(context, module, options, None)
    }

    /// [`Self::compile_with`], also taking the argument guards of function
    /// `entry` out of the module ([`Self::entry_guards`]), for callers that
    /// check them natively before each call.
    pub fn compile_entry<'c>(
        context: &'c Context,
        module: &mut Module<'c>,
        options: &CodegenOptions,
        entry: &str,
    ) -> Result<Self, Error> {
        Self::build(context, module, options, Some(entry))
    }

    fn build<'c>(
        context: &'c Context,
        module: &mut Module<'c>,
        options: &CodegenOptions,
        entry: Option<&str>,
    ) -> Result<Self, Error> {
        let text = with_locations(module);
        let key = cache_key(&text, options, entry);
        let hit = cache().lock().ok().and_then(|mut c| {
            c.get(key.as_str())
                .map(|e| (e.fused.clone(), Arc::clone(&e.shared)))
        });
        if let Some((fused, shared)) = hit
            && let Some(parsed) = jitc_compiler::parse_module(context, &fused)
        {
            *module = parsed;
            return Ok(Self::new(shared, true, false));
        }
        let remember = |fused: String, shared: &Arc<Shared>| {
            if let Ok(mut cache) = cache().lock() {
                cache.insert(
                    key.clone(),
                    Entry {
                        fused,
                        shared: Arc::clone(shared),
                    },
                );
            }
        };
        let disk = disk_cache().map(|cache| {
            let parts = KeyParts::new(&text, options, entry);
            (cache, parts)
        });
        if let Some((cache, parts)) = &disk
            && let Some(hit) = cache.load(parts)
            && let Some(parsed) = jitc_compiler::parse_module(context, &hit.fused)
        {
            *module = parsed;
            let shared = Shared::new(hit.kernels);
            remember(hit.fused, &shared);
            return Ok(Self::new(shared, false, true));
        }
        let kernels = jitc_compiler::compile_cpu(context, module, options, entry)?;
        let fused = with_locations(module);
        if let Some((cache, parts)) = &disk
            && let Err(problem) = cache.store(parts, &fused, &kernels)
        {
            warn_store_failed(cache, &problem);
        }
        let shared = Shared::new(kernels);
        remember(fused, &shared);
        Ok(Self::new(shared, false, false))
    }

    fn new(shared: Arc<Shared>, cache_hit: bool, disk_hit: bool) -> Self {
        Self {
            shared,
            cache_hit,
            disk_hit,
            timing: AtomicBool::new(false),
            times: Mutex::default(),
        }
    }

    /// Whether the kernels came from this process's cache.
    pub fn cache_hit(&self) -> bool {
        self.cache_hit
    }

    /// How many objects the kernels came in: more than one when groups of
    /// kernels that share no code were compiled on threads of their own.
    pub fn object_count(&self) -> usize {
        self.shared.kernels.objects().len()
    }

    /// Whether the kernels were loaded from the disk cache (no MLIR or
    /// LLVM pass ran; [`Self::llvm_ir`] is empty then).
    pub fn disk_hit(&self) -> bool {
        self.disk_hit
    }

    /// Kernels that could not be compiled (they run in the interpreter),
    /// with the reason.
    pub fn interpreted_kernels(&self) -> &[(String, String)] {
        &self.shared.kernels.skipped
    }

    /// The calling convention of compiled kernel `kernel`.
    pub fn signature(&self, kernel: &str) -> Option<&jitc_compiler::KernelSignature> {
        self.shared.kernels.get(kernel).map(|(_, signature)| signature)
    }

    /// The optimized LLVM IR of the kernels.
    pub fn llvm_ir(&self) -> &str {
        &self.shared.kernels.llvm_ir
    }

    /// The entry guards taken out by [`Self::compile_entry`].
    pub fn entry_guards(&self) -> &[EntryGuard] {
        &self.shared.kernels.entry_guards
    }

    /// The host plan of function `name` of `module`, built on first use;
    /// `Err` says why the function runs in the interpreter.
    fn plan(&self, module: &Module, name: &str) -> Arc<Result<HostPlan, String>> {
        let mut plans = self
            .shared
            .plans
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(plan) = plans.get(name) {
            return Arc::clone(plan);
        }
        let plan = Arc::new(HostPlan::build(module, name, &|kernel| {
            let compiled = self.shared.kernels.get(kernel).map(|(_, signature)| {
                if signature.sizes.is_some() || !signature.exact.is_empty() {
                    Compiled::MayDecline
                } else {
                    Compiled::Always
                }
            });
            compiled_or_skipped(compiled, &self.shared.kernels.skipped, kernel)
        }));
        plans.insert(name.to_owned(), Arc::clone(&plan));
        plan
    }

    /// Why function `name` of `module` runs its host code in the
    /// interpreter; `None` when it runs as a host plan.
    pub fn fallback(&self, module: &Module, name: &str) -> Option<String> {
        self.plan(module, name).as_ref().as_ref().err().cloned()
    }

    /// Runs function `name` of `module` (the module given to
    /// [`Self::compile`]) on `args`: as a host plan, with no interpreter
    /// on the path, when the function has one ([`Self::fallback`] says
    /// why not), else in the interpreter with its kernels native.
    pub fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        Ok(self.run_host(module, name, args, state, None)?)
    }

    /// [`Self::run`], also merging what the run observed into `profile`:
    /// through the host plan when the function has one.
    pub fn run_profiled(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Error> {
        Ok(self.run_host(module, name, args, state, Some(profile))?)
    }

    /// [`Self::run`], or [`Self::run_profiled`] with a `profile`, with the
    /// interpreter's error type.
    pub(crate) fn run_host(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: Option<&mut Profile>,
    ) -> Result<Vec<Value>, jitc_interp::Error> {
        run_host_code(
            &self.plan(module, name),
            self,
            self,
            module,
            name,
            args,
            state,
            profile,
        )
    }
}

impl HostKernels for CpuModule {
    fn launch_on_host(
        &self,
        name: &str,
        mut args: Vec<Value>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        // An argument the kernel may write a result into, when nothing else
        // holds its buffer and it has the shape the kernel was compiled for.
        let (_, signature) = self.shared.kernels.get(name)?;
        let donated = signature.in_place.and_then(|(i, _)| {
            let fits = matches!(
                (args.get(i), signature.inputs.get(i)),
                (Some(Value::Tensor(tensor)), Some(Slot::Tensor(shape, element)))
                    if tensor.shape() == shape.as_slice() && tensor.element_type() == *element
            );
            if !fits {
                return None;
            }
            let Value::Tensor(tensor) = std::mem::replace(&mut args[i], Value::Index(0)) else {
                return None;
            };
            match Arc::try_unwrap(tensor) {
                Ok(tensor) => Some(tensor),
                Err(shared) => {
                    args[i] = Value::Tensor(shared);
                    None
                }
            }
        });
        self.call(name, &args, donated)
    }
}

impl Executor for CpuModule {
    fn interpreted_kernels(&self) -> &[(String, String)] {
        CpuModule::interpreted_kernels(self)
    }

    fn run(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
    ) -> Result<Vec<Value>, Error> {
        CpuModule::run(self, module, name, args, state)
    }

    fn run_profiled(
        &self,
        module: &Module,
        name: &str,
        args: Vec<Value>,
        state: &mut StateStore,
        profile: &mut Profile,
    ) -> Result<Vec<Value>, Error> {
        CpuModule::run_profiled(self, module, name, args, state, profile)
    }

    fn schedule_note(&self, module: &Module, function: &str) -> Option<String> {
        self.fallback(module, function)
            .map(|reason| format!("@{function} runs its host code in the interpreter: {reason}"))
    }

    fn set_kernel_timing(&self, on: bool) {
        if on && let Ok(mut times) = self.times.lock() {
            times.clear();
        }
        self.timing.store(on, Ordering::Relaxed);
    }

    fn kernel_times(&self) -> Vec<(String, KernelTime)> {
        self.times
            .lock()
            .map(|times| times.iter().map(|(name, time)| (name.clone(), *time)).collect())
            .unwrap_or_default()
    }
}

/// What a kernel reads in place of an empty argument of dynamic shape: one
/// vector of zeros of the widest target (kernels only read their inputs).
#[repr(align(64))]
struct EmptyInput([u64; 8]);
static EMPTY_INPUT: EmptyInput = EmptyInput([0; 8]);

impl KernelRunner for CpuModule {
    fn run_kernel(
        &self,
        name: &str,
        args: &[Value],
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        self.call(name, args, None)
    }
}

impl CpuModule {
    /// [`Self::call_kernel`], timed while kernel timing is on (the call
    /// whole: argument checks, the worker team's split, the status check).
    /// A call left to the interpreter (`None`) is not a kernel call.
    fn call(
        &self,
        name: &str,
        args: &[Value],
        donated: Option<Tensor>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        if !self.timing.load(Ordering::Relaxed) {
            return self.call_kernel(name, args, donated);
        }
        let start = Instant::now();
        let result = self.call_kernel(name, args, donated)?;
        let elapsed = start.elapsed();
        if let Ok(mut times) = self.times.lock() {
            let time = times.entry(name.to_owned()).or_default();
            time.calls += 1;
            time.total += elapsed;
        }
        Some(result)
    }

    /// Runs kernel `name` on `args`; with `donated`, the buffer of its
    /// argument `i` of [`jitc_compiler::KernelSignature::in_place`] (taken
    /// out of `args`, and checked to fit), written in place as result `j`.
    fn call_kernel(
        &self,
        name: &str,
        args: &[Value],
        mut donated: Option<Tensor>,
    ) -> Option<Result<Vec<Value>, jitc_compiler::KernelFailure>> {
        let (function, signature) = self.shared.kernels.get(name)?;
        // An argument of dynamic shape read at the points of a static
        // domain that is not of the domain's shape: the interpreter runs
        // the call and reports it at the op.
        for (i, shape) in &signature.exact {
            if let Some(Value::Tensor(tensor)) = args.get(*i)
                && tensor.shape() != shape.as_slice()
            {
                return None;
            }
        }
        let pair = signature.in_place.filter(|_| donated.is_some());
        let mut indices: Vec<i64> = Vec::with_capacity(args.len());
        for (arg, slot) in args.iter().zip(&signature.inputs) {
            if let (Value::Index(i), Slot::Index) = (arg, slot) {
                indices.push(*i);
            }
        }
        // A flat kernel: every argument has one shape, which the results
        // take, and the loop runs over its elements.
        let mut work = (signature.outer, signature.points);
        let mut flat_shape: Option<&[usize]> = None;
        if signature.flat {
            for arg in args {
                if let Value::Tensor(tensor) = arg {
                    match flat_shape {
                        None => flat_shape = Some(tensor.shape()),
                        Some(shape) if shape != tensor.shape() => {
                            return Some(Err(format!(
                                "operands have shapes {shape:?} and {:?} at run time",
                                tensor.shape()
                            )
                            .into()));
                        }
                        Some(_) => {}
                    }
                }
            }
            let elements = flat_shape.map_or(0, |s| s.iter().product::<usize>());
            work = (elements as i64, elements as u64);
        }
        // A kernel over a dynamic domain: its sizes, read from the
        // arguments; the interpreter runs a call they do not fit.
        let mut sizes: Vec<i64> = Vec::new();
        let mut output_shapes: Vec<Vec<usize>> = Vec::new();
        if let Some(dynamic) = &signature.sizes {
            sizes = call_sizes(dynamic, args)?;
            let rank = dynamic.domain.len();
            let domain = &sizes[..rank];
            work = (
                domain.get(dynamic.split).copied().unwrap_or(1),
                domain.iter().map(|&n| n as u64).product(),
            );
            let mut rest = &sizes[rank..];
            for output in &dynamic.outputs {
                let (mine, tail) = rest.split_at(output.len());
                output_shapes.push(mine.iter().map(|&n| n as usize).collect());
                rest = tail;
            }
        }
        let mut outputs: Vec<Tensor> = Vec::with_capacity(signature.outputs.len());
        for (j, slot) in signature.outputs.iter().enumerate() {
            if pair.is_some_and(|(_, out)| out == j)
                && let Some(tensor) = donated.take()
            {
                outputs.push(tensor);
                continue;
            }
            match slot {
                Slot::Dynamic(_, element) if signature.sizes.is_some() => {
                    match Tensor::for_overwrite(output_shapes[j].clone(), *element) {
                        Ok(tensor) => outputs.push(tensor),
                        Err(message) => return Some(Err(message.into())),
                    }
                }
                Slot::Dynamic(_, element) if signature.flat => {
                    let Some(shape) = flat_shape.map(<[usize]>::to_vec) else {
                        return Some(Err(
                            "a flat kernel has no tensor argument to take its shape from".into()
                        ));
                    };
                    match Tensor::for_overwrite(shape, *element) {
                        Ok(tensor) => outputs.push(tensor),
                        Err(message) => return Some(Err(message.into())),
                    }
                }
                Slot::Tensor(shape, element) => match Tensor::for_overwrite(shape.clone(), *element) {
                    Ok(tensor) => outputs.push(tensor),
                    Err(message) => return Some(Err(message.into())),
                },
                _ => return Some(Err("a kernel that returns an index or a dynamic tensor".into())),
            }
        }
        // The shapes of the arguments with dynamic dimensions, passed
        // after the results (see `KernelSignature::shape_slots`).
        let mut shapes: Vec<Vec<i64>> = Vec::new();
        let mut status: KernelStatus = [0; 2];
        let mut pointers: Vec<*mut u8> = Vec::with_capacity(args.len() + outputs.len() + 1);
        let mut next_index = 0;
        for (i, (arg, slot)) in args.iter().zip(&signature.inputs).enumerate() {
            if let Some((_, j)) = pair.filter(|&(input, _)| input == i) {
                // The result's buffer: the kernel reads and writes it.
                pointers.push(outputs[j].buffer_mut().as_mut_ptr());
                continue;
            }
            match (arg, slot) {
                (Value::Tensor(tensor), Slot::Tensor(..))
                    if slot.fits(tensor.shape(), tensor.element_type()) =>
                {
                    // The kernel only reads its inputs.
                    pointers.push(tensor.buffer().as_ptr().cast_mut());
                }
                (Value::Index(_), Slot::Index) => {
                    pointers.push((&mut indices[next_index] as *mut i64).cast());
                    next_index += 1;
                }
                (Value::Tensor(tensor), Slot::Dynamic(..))
                    if slot.fits(tensor.shape(), tensor.element_type()) =>
                {
                    // An empty tensor's address is never dereferenced, but
                    // a kernel reads where an index is out of bounds at
                    // offset 0 and then selects the overflow value: it gets
                    // memory it may read.
                    let pointer = if tensor.shape().contains(&0) {
                        EMPTY_INPUT.0.as_ptr().cast::<u8>()
                    } else {
                        tensor.buffer().as_ptr()
                    };
                    pointers.push(pointer.cast_mut());
                    shapes.push(tensor.shape().iter().map(|&d| d as i64).collect());
                }
                _ => {
                    return Some(Err(format!(
                        "argument {} does not match the compiled kernel",
                        pointers.len()
                    )
                    .into()));
                }
            }
        }
        for output in &mut outputs {
            pointers.push(output.buffer_mut().as_mut_ptr());
        }
        for shape in &mut shapes {
            pointers.push(shape.as_mut_ptr().cast());
        }
        if signature.sizes.is_some() {
            pointers.push(sizes.as_mut_ptr().cast());
        }
        pointers.push(status.as_mut_ptr().cast());
        let (outer, points) = work;
        let threads = thread_count().min(outer.max(1) as usize);
        // A kernel that could be split runs alone until one call has shown
        // how fast it is; it is split from then on when a call would take
        // long enough for the workers' wake-up to pay.
        // A kernel in parts (`partial`) splits as a parallel one does, on
        // buffers of its own per part (it never has an in-place pair).
        let partial = !signature.parallel && !signature.partial.is_empty();
        let splittable =
            (signature.parallel || partial) && threads > 1 && points >= PARALLEL_MIN_ELEMENTS as u64;
        let speed = self.shared.speeds.get(name).filter(|_| splittable);
        let known = speed.map_or(0, |s| s.load(Ordering::Relaxed));
        let nanos = known.saturating_mul(points) / 1000;
        let awake = team().is_some_and(|t| t.awake());
        let threshold = if awake {
            SPLIT_AWAKE_MIN_NANOS
        } else {
            SPLIT_MIN_NANOS
        };
        if known != 0 && !awake && (SPLIT_AWAKE_MIN_NANOS..SPLIT_MIN_NANOS).contains(&nanos) {
            // Worth splitting only with a helper awake: this call runs
            // alone, the next ones of the burst find the helpers spinning.
            if let Some(team) = team() {
                team.rouse();
            }
        }
        if known != 0 && nanos >= threshold {
            status = if signature.parallel {
                run_split(*function, &pointers, outer, threads)
            } else {
                let first_output = signature.inputs.len();
                match run_partial(
                    *function,
                    &pointers,
                    first_output,
                    &mut outputs,
                    &signature.partial,
                    outer,
                    threads,
                ) {
                    Ok(status) => status,
                    Err(message) => return Some(Err(message.into())),
                }
            };
        } else {
            let start = speed.map(|_| Instant::now());
            // SAFETY: `pointers` holds one live buffer per argument and
            // result, shaped as the kernel was compiled for (checked above;
            // a dynamic argument's sizes follow the results, then a dynamic
            // domain's sizes, which every source agreed on), then the zeroed
            // status record; all outlive the call.
            unsafe { function(pointers.as_ptr(), 0, outer) };
            if let (Some(speed), Some(start)) = (speed, start) {
                let picos = (start.elapsed().as_nanos() as u64).saturating_mul(1000) / points.max(1);
                // 0 is "not measured": the first measurement replaces it,
                // later ones can only lower it.
                let picos = picos.max(1);
                if speed
                    .compare_exchange(0, picos, Ordering::Relaxed, Ordering::Relaxed)
                    .is_err()
                {
                    speed.fetch_min(picos, Ordering::Relaxed);
                }
            }
        }
        if let Some(failure) = signature.failure(status) {
            return Some(Err(failure));
        }
        Some(Ok(outputs.into_iter().map(Value::tensor).collect()))
    }
}
