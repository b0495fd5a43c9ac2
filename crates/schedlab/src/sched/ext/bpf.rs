//! A sched_ext scheduler's BPF C source, compiled natively and run as the class's
//! ops (`[kernel] class = "ext"`, `scheduler = "path/to/sched.bpf.c"`).
//!
//! In the kernel a sched_ext scheduler is BPF bytecode: libbpf loads it, the
//! verifier checks it, and `struct_ops` attaches its programs as the class's
//! callbacks; its kfuncs run in kernel/sched/ext.c. Nothing in its source depends
//! on being BPF: it is C over a small vocabulary (helpers, kfuncs, maps, the
//! `task_struct` fields it reads). So schedlab compiles the same file with the host's
//! clang against a shim of its own (crates/schedlab/shim: `scx/common.bpf.h` and
//! the runtime `schedlab_shim.c`), loads the shared object, and calls its ops
//! table from the class at the points the kernel does.
//!
//! The object talks back through a table of `extern "C"` functions
//! (`HostFns`) whose context is this module's `Host`: each forwards a kfunc to
//! [`Kf`], so a C scheduler obeys the same ownership, dispatch-buffer and
//! kfunc-context rules as the Rust ones. Tasks are handed to C as a `task_struct`
//! view (`CTask`) per task, filled from the class's [`super::ScxTask`] before a
//! callback or kfunc that names it and read back after (the three fields BPF may
//! write: `scx.slice`, `scx.dsq_vtime`, `scx.disallow`). Each run loads its own
//! copy of the object, so its globals and maps start zeroed and are never shared
//! between runs, and a compiled object is cached by the hash of its inputs.
//!
//! Unlike BPF, the object is native code, so it is built and run with care.
//! [`compile`] lets the preprocessor open only the shim's headers and the
//! compiler's own, allows no inline assembly, and refuses an object with code
//! that would run at load. [`load`] starts an object only inside the sandbox,
//! after `experiment::sandbox` has mapped it (`preload`) and turned its
//! seccomp filter on.

use std::ffi::{c_char, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

use super::{op, Kf, ScxOps};
use crate::abi::Pid;
use crate::machine::CpuMask;

/// The shim's ABI version (`SCHEDLAB_SHIM_ABI` in common.bpf.h).
const SHIM_ABI: u32 = 1;

/// The shim's files, as compiled into the binary.
const SHIM_FILES: &[(&str, &str)] = &[
    (
        "scx/common.bpf.h",
        include_str!("../../../shim/scx/common.bpf.h"),
    ),
    (
        "scx/compat.bpf.h",
        include_str!("../../../shim/scx/compat.bpf.h"),
    ),
    (
        "scx/user_exit_info.h",
        include_str!("../../../shim/scx/user_exit_info.h"),
    ),
    ("vmlinux.h", include_str!("../../../shim/vmlinux.h")),
    (
        "bpf/bpf_helpers.h",
        include_str!("../../../shim/bpf/bpf_helpers.h"),
    ),
    (
        "bpf/bpf_tracing.h",
        include_str!("../../../shim/bpf/bpf_tracing.h"),
    ),
    (
        "bpf/bpf_core_read.h",
        include_str!("../../../shim/bpf/bpf_core_read.h"),
    ),
    (
        "schedlab_shim.c",
        include_str!("../../../shim/schedlab_shim.c"),
    ),
];

/// Both compiles' flags: position-independent, every symbol hidden but the
/// shim's entry points, an undeclared helper and an unresolved kfunc errors.
const CFLAGS: &[&str] = &[
    "-O2",
    "-g0",
    "-fPIC",
    "-std=gnu11",
    "-fvisibility=hidden",
    "-Werror=implicit-function-declaration",
    "-Werror=incompatible-pointer-types",
    "-Werror=int-conversion",
    "-Wno-unused-function",
    "-Wno-unused-variable",
    "-Wno-unknown-attributes",
    "-Wno-pointer-sign",
];

/// The scheduler's own unit on top: no header of the host's (only the compiler's
/// own, `stddef.h` and the like, and the shim's), and no inline assembly (whose
/// `.incbin` would pull a file of the machine into the object).
const UNIT_CFLAGS: &[&str] = &["-nostdlibinc", "-fno-gnu-inline-asm"];

/// The link: a shared object without the C runtime's start files (so that no
/// constructor of theirs runs at load either), every symbol bound at load.
const LDFLAGS: &[&str] = &[
    "-shared",
    "-nostartfiles",
    "-Wl,--no-undefined",
    "-Wl,-z,now",
];

/// The shipped reference schedulers (`scenarios/scx/`): a scenario may name one
/// of these, byte for byte, without `--allow-native-scheduler`.
const SHIPPED: &[&[u8]] = &[
    include_bytes!("../../../../../scenarios/scx/central_fifo.bpf.c"),
    include_bytes!("../../../../../scenarios/scx/global_fifo.bpf.c"),
    include_bytes!("../../../../../scenarios/scx/llc_vtime.bpf.c"),
];

/// Whether `text` is one of the shipped reference schedulers, byte for byte.
pub fn is_shipped(text: &[u8]) -> bool {
    SHIPPED.contains(&text)
}

/// The clang to compile with: `$SCHEDLAB_CLANG`, else the first of `clang`,
/// `clang-19` … `clang-14` on `PATH`.
pub fn find_clang() -> Result<PathBuf, String> {
    if let Some(c) = std::env::var_os("SCHEDLAB_CLANG") {
        return Ok(PathBuf::from(c));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    let names = [
        "clang", "clang-19", "clang-18", "clang-17", "clang-16", "clang-15", "clang-14",
    ];
    for n in names {
        for dir in std::env::split_paths(&path) {
            let p = dir.join(n);
            if p.is_file() {
                return Ok(p);
            }
        }
    }
    Err(
        "a BPF C scheduler needs clang to build it natively and none was found on PATH \
         (install it with `apt-get install clang`, Debian's package, or set SCHEDLAB_CLANG)"
            .into(),
    )
}

/// Where compiled schedulers are kept: `$SCHEDLAB_SCX_CACHE`, else
/// `$XDG_CACHE_HOME/schedlab/scx`, else `~/.cache/schedlab/scx`.
fn cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    if let Some(p) = var("SCHEDLAB_SCX_CACHE") {
        return Ok(PathBuf::from(p));
    }
    if let Some(p) = var("XDG_CACHE_HOME") {
        return Ok(PathBuf::from(p).join("schedlab/scx"));
    }
    var("HOME")
        .map(|h| PathBuf::from(h).join(".cache/schedlab/scx"))
        .ok_or_else(|| {
            "no cache directory: set SCHEDLAB_SCX_CACHE (or XDG_CACHE_HOME or HOME)".into()
        })
}

/// The shim's files written once under `dir`, named by their hash.
fn shim_dir(dir: &Path) -> Result<PathBuf, String> {
    let mut h = Sha256::new();
    for (name, text) in SHIM_FILES {
        h.update(name.as_bytes());
        h.update(text.as_bytes());
    }
    let hex: String = h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let out = dir.join(format!("shim-{hex}"));
    if out.join("schedlab_shim.c").is_file() {
        return Ok(out);
    }
    let tmp = tempfile::Builder::new()
        .prefix(".shim-")
        .tempdir_in(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    for (name, text) in SHIM_FILES {
        let p = tmp.path().join(name);
        std::fs::create_dir_all(p.parent().expect("a file in a directory"))
            .and_then(|()| std::fs::write(&p, text))
            .map_err(|e| format!("{}: {e}", p.display()))?;
    }
    let tmp = tmp.keep();
    if std::fs::rename(&tmp, &out).is_err() {
        // Another process wrote the same files first.
        let _ = std::fs::remove_dir_all(&tmp);
    }
    Ok(out)
}

/// A global of the scheduler set before it loads, as a libbpf loader sets
/// `skel->rodata->name` or `skel->bss->name` (`[kernel.scheduler_globals]`).
#[derive(Clone, Debug, PartialEq)]
pub enum GlobalValue {
    /// A scalar (a boolean is 0 or 1).
    Int(i64),
    /// The first elements of an array.
    Array(Vec<i64>),
}

/// Whether `name` can be a C identifier.
pub fn is_c_identifier(name: &str) -> bool {
    let mut c = name.chars();
    c.next()
        .is_some_and(|f| f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

/// The translation unit schedlab compiles: the scheduler's source with `const`
/// defined away (so that its `const volatile` knobs live in writable memory, as
/// libbpf's rodata map is writable until load), then `schedlab_set_globals`,
/// which assigns each of `globals` with the C types the source declares.
fn wrapper(source_name: &str, globals: &[(String, GlobalValue)]) -> String {
    // i64::MIN has no literal of its own in C (its magnitude overflows `long long`).
    let lit = |v: i64| match v {
        i64::MIN => "(-9223372036854775807LL - 1)".to_string(),
        v => format!("({v}LL)"),
    };
    let mut w = String::from(
        "/* generated by schedlab: the scheduler and the globals it is given */\n#define const\n",
    );
    w += &format!("#include \"{source_name}\"\n#undef const\n");
    w += "__attribute__((visibility(\"default\"))) void schedlab_set_globals(void)\n{\n";
    for (name, v) in globals {
        w += &format!("#line 1 \"[kernel.scheduler_globals] {name}\"\n");
        match v {
            GlobalValue::Int(i) => w += &format!("\t{name} = {};\n", lit(*i)),
            GlobalValue::Array(a) => {
                w += &format!(
                    "\t{{ _Static_assert(sizeof({name}) / sizeof({name}[0]) >= {n}, \
                     \"more values than the array holds\"); ",
                    n = a.len()
                );
                for (i, x) in a.iter().enumerate() {
                    w += &format!("{name}[{i}] = {}; ", lit(*x));
                }
                w += "}\n";
            }
        }
    }
    w += "}\n";
    w
}

/// Compile the scheduler at `source` with `globals` set (or find it compiled):
/// the path of its shared object. Errors are clang's, with the scheduler's file
/// and line, and a kfunc or helper the shim lacks is named.
///
/// The source is compiled as a copy of its own in a fresh directory, against the
/// shim's headers and the compiler's own only (`UNIT_CFLAGS`): a file the
/// preprocessor opened anywhere else (an absolute or `..` include) refuses the
/// build before it is compiled. The linked object is then read: one that would
/// run code of its own when loaded (a constructor, `_init`, an ifunc resolver) is
/// refused ([`check_object`]).
pub fn compile(source: &Path, globals: &[(String, GlobalValue)]) -> Result<PathBuf, String> {
    let text = std::fs::read(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let source = std::path::absolute(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let name = source
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| !n.is_empty() && !n.contains(['"', '\\', '\n']))
        .ok_or_else(|| format!("{}: not a file name schedlab can compile", source.display()))?
        .to_string();
    let clang = find_clang()?;
    // The compiler in the key without running it: its resolved path, size and
    // modification time (a cached object costs no subprocess).
    let resolved = std::fs::canonicalize(&clang).unwrap_or_else(|_| clang.clone());
    let meta =
        std::fs::metadata(&resolved).map_err(|e| format!("cannot run {}: {e}", clang.display()))?;
    let version = format!(
        "{} {} {:?}",
        resolved.display(),
        meta.len(),
        meta.modified().ok()
    );
    let dir = cache_dir()?;
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let unit = wrapper(&name, globals);
    // The key: the source and its name, the globals, the shim, the compiler and
    // its flags.
    let mut h = Sha256::new();
    h.update(name.as_bytes());
    h.update(&text);
    h.update(unit.as_bytes());
    for (name, t) in SHIM_FILES {
        h.update(name.as_bytes());
        h.update(t.as_bytes());
    }
    h.update(version.as_bytes());
    for f in [CFLAGS, UNIT_CFLAGS, LDFLAGS] {
        h.update(f.join(" ").as_bytes());
    }
    let key: String = h.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let object = dir.join(format!("{key}.so"));
    if object.is_file() {
        return Ok(object);
    }
    let shim = shim_dir(&dir)?;
    let build = tempfile::Builder::new()
        .prefix(".build-")
        .tempdir_in(&dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?;
    let b = build.path();
    std::fs::write(b.join(&name), &text).map_err(|e| format!("{}: {e}", b.display()))?;
    let unit_path = b.join("schedlab-unit.c");
    std::fs::write(&unit_path, &unit).map_err(|e| format!("{}: {e}", unit_path.display()))?;
    let src_dir = source.parent().unwrap_or(Path::new("/"));
    let fail = |stderr: &[u8]| {
        let text = String::from_utf8_lossy(stderr)
            .replace(&b.display().to_string(), &src_dir.display().to_string());
        diagnose(&text, &shim)
    };
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd
            .output()
            .map_err(|e| format!("cannot run {}: {e}", clang.display()))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(fail(&out.stderr))
        }
    };
    // 1. Preprocess only, listing every file opened: each must be the unit, the
    //    copy, the shim's or the compiler's own.
    let deps = b.join("unit.d");
    run(Command::new(&clang)
        .args(CFLAGS)
        .args(UNIT_CFLAGS)
        .args(["-E", "-w", "-fno-caret-diagnostics", "-MD", "-MF"])
        .arg(&deps)
        .arg("-I")
        .arg(&shim)
        .arg("-o")
        .arg(b.join("unit.i"))
        .arg(&unit_path))?;
    let resource = Command::new(&clang)
        .arg("-print-resource-dir")
        .output()
        .map_err(|e| format!("cannot run {}: {e}", clang.display()))?;
    let resource = PathBuf::from(String::from_utf8_lossy(&resource.stdout).trim());
    let deps_text =
        std::fs::read_to_string(&deps).map_err(|e| format!("{}: {e}", deps.display()))?;
    let roots: Vec<PathBuf> = [b, shim.as_path(), resource.as_path()]
        .iter()
        .filter_map(|p| std::fs::canonicalize(p).ok())
        .collect();
    for dep in make_deps(&deps_text) {
        let real = std::fs::canonicalize(&dep).unwrap_or_else(|_| PathBuf::from(&dep));
        if !roots.iter().any(|r| real.starts_with(r)) {
            return Err(format!(
                "the scheduler includes {}, outside schedlab's shim: a scheduler may include \
                 only the shim's headers (<scx/common.bpf.h>, <vmlinux.h>, <bpf/...>) and the \
                 compiler's own (docs/sched-ext.md, \"Trust\")",
                dep.replace(&b.display().to_string(), &src_dir.display().to_string())
            ));
        }
    }
    // 2. The scheduler's unit and the shim's runtime, each to an object.
    let unit_o = b.join("unit.o");
    run(Command::new(&clang)
        .args(CFLAGS)
        .args(UNIT_CFLAGS)
        .arg("-c")
        .arg("-I")
        .arg(&shim)
        .arg("-o")
        .arg(&unit_o)
        .arg(&unit_path))?;
    let shim_o = b.join("shim.o");
    run(Command::new(&clang)
        .args(CFLAGS)
        .arg("-c")
        .arg("-I")
        .arg(&shim)
        .arg("-o")
        .arg(&shim_o)
        .arg(shim.join("schedlab_shim.c")))?;
    // 3. The link, and the object read before anything loads it.
    let out_path = b.join("sched.so");
    run(Command::new(&clang)
        .args(LDFLAGS)
        .arg("-o")
        .arg(&out_path)
        .arg(&unit_o)
        .arg(&shim_o))?;
    check_object(&out_path).map_err(|e| format!("{}: {e}", source.display()))?;
    std::fs::rename(&out_path, &object).map_err(|e| format!("{}: {e}", object.display()))?;
    Ok(object)
}

/// The files a Make rule from `clang -MD` lists after its target.
fn make_deps(rule: &str) -> Vec<String> {
    let joined = rule.replace("\\\n", " ");
    let body = joined.split_once(": ").map_or("", |(_, b)| b);
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek().is_some_and(|n| *n == ' ') => {
                cur.push(' ');
                chars.next();
            }
            c if c.is_whitespace() => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Refuse an object that would run code of its own while the dynamic loader maps
/// it (before the sandbox's filter is on): an `_init` (`DT_INIT`), constructors
/// (`DT_INIT_ARRAY`, `DT_PREINIT_ARRAY`) or an ifunc resolver (`STT_GNU_IFUNC`).
pub fn check_object(path: &Path) -> Result<(), String> {
    use object::elf;
    use object::read::elf::{Dyn, ElfFile64, FileHeader, SectionHeader};
    let data = std::fs::read(path).map_err(|e| e.to_string())?;
    let file = ElfFile64::<object::Endianness>::parse(&*data)
        .map_err(|e| format!("not an ELF object schedlab built: {e}"))?;
    let endian = file.endian();
    let header = file.elf_header();
    let sections = header
        .sections(endian, &*data)
        .map_err(|e| format!("unreadable ELF sections: {e}"))?;
    for s in sections.iter() {
        let Some((dyns, _)) = s
            .dynamic(endian, &*data)
            .map_err(|e| format!("unreadable dynamic section: {e}"))?
        else {
            continue;
        };
        for d in dyns {
            let what = match d.tag32(endian) {
                Some(elf::DT_INIT) => "an `_init` function",
                Some(elf::DT_INIT_ARRAY) => "a constructor (`.init_array`)",
                Some(elf::DT_PREINIT_ARRAY) => "a `.preinit_array`",
                _ => continue,
            };
            return Err(format!(
                "the scheduler has {what}, code that would run when it is loaded: refused"
            ));
        }
    }
    for table in [
        sections.symbols(endian, &*data, elf::SHT_SYMTAB),
        sections.symbols(endian, &*data, elf::SHT_DYNSYM),
    ] {
        let table = table.map_err(|e| format!("unreadable symbols: {e}"))?;
        if let Some(sym) = table.iter().find(|s| s.st_type() == elf::STT_GNU_IFUNC) {
            let name = table
                .symbol_name(endian, sym)
                .map(|n| String::from_utf8_lossy(n).into_owned())
                .unwrap_or_default();
            return Err(format!(
                "the scheduler has an ifunc (`{name}`), whose resolver would run when it is \
                 loaded: refused"
            ));
        }
    }
    Ok(())
}

/// clang's failure as an error: its `error:` lines (the scheduler's file:line),
/// and each unresolved symbol named as what the shim lacks.
fn diagnose(stderr: &str, shim: &Path) -> String {
    let shim_s = shim.display().to_string();
    let mut missing: Vec<String> = Vec::new();
    let mut errors: Vec<String> = Vec::new();
    for line in stderr.lines() {
        if let Some(i) = line.find("undefined reference to `") {
            let rest = &line[i + "undefined reference to `".len()..];
            let sym = rest.trim_end_matches(['\'', '`']).to_string();
            if sym == "__schedlab_scx_ops" {
                errors.push("the scheduler defines no ops table (SCX_OPS_DEFINE)".into());
            } else if !missing.contains(&sym) {
                missing.push(sym);
            }
        } else if line.contains("error:") && errors.len() < 12 {
            errors.push(line.replace(&shim_s, "<schedlab shim>"));
        }
    }
    let mut msg = Vec::new();
    if !missing.is_empty() {
        msg.push(format!(
            "the scheduler uses {}, which schedlab's shim does not provide yet \
             (docs/sched-ext.md lists what it does)",
            missing
                .iter()
                .map(|s| format!("`{s}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    msg.extend(errors);
    if msg.is_empty() {
        msg.push(stderr.trim().to_string());
    }
    format!("clang failed:\n  {}", msg.join("\n  "))
}

/// `struct cpumask` (`NR_CPUS` = 1024 bits).
#[repr(C)]
#[derive(Clone, Copy)]
struct CCpumask {
    bits: [u64; 16],
}

#[repr(C)]
struct CSchedEntity {
    exec_start: u64,
    sum_exec_runtime: u64,
    prev_sum_exec_runtime: u64,
    vruntime: u64,
}

#[repr(C)]
struct CScxEntity {
    dsq_vtime: u64,
    slice: u64,
    weight: u32,
    flags: u32,
    sticky_cpu: i32,
    holding_cpu: i32,
    runnable_at: u64,
    core_sched_at: u64,
    ddsp_dsq_id: u64,
    ddsp_enq_flags: u64,
    disallow: bool,
}

/// The shim's `struct task_struct` view.
#[repr(C)]
pub struct CTask {
    pid: i32,
    tgid: i32,
    flags: u32,
    prio: i32,
    static_prio: i32,
    normal_prio: i32,
    policy: u32,
    nr_cpus_allowed: i32,
    migration_disabled: u16,
    comm: [u8; 16],
    cpus_ptr: *const CCpumask,
    cpus_mask: CCpumask,
    se: CSchedEntity,
    scx: CScxEntity,
}

/// `PF_EXITING`.
const PF_EXITING: u32 = 0x4;
/// `SCHED_EXT`.
const SCHED_EXT: u32 = 7;

type TaskPtr = *mut CTask;

/// The shim's `struct sched_ext_ops`.
#[repr(C)]
#[derive(Clone, Copy)]
struct COps {
    select_cpu: Option<unsafe extern "C" fn(TaskPtr, i32, u64) -> i32>,
    enqueue: Option<unsafe extern "C" fn(TaskPtr, u64)>,
    dequeue: Option<unsafe extern "C" fn(TaskPtr, u64)>,
    dispatch: Option<unsafe extern "C" fn(i32, TaskPtr)>,
    tick: Option<unsafe extern "C" fn(TaskPtr)>,
    runnable: Option<unsafe extern "C" fn(TaskPtr, u64)>,
    running: Option<unsafe extern "C" fn(TaskPtr)>,
    stopping: Option<unsafe extern "C" fn(TaskPtr, bool)>,
    quiescent: Option<unsafe extern "C" fn(TaskPtr, u64)>,
    yield_: Option<unsafe extern "C" fn(TaskPtr, TaskPtr) -> bool>,
    core_sched_before: *const c_void,
    set_weight: Option<unsafe extern "C" fn(TaskPtr, u32)>,
    set_cpumask: Option<unsafe extern "C" fn(TaskPtr, *const CCpumask)>,
    update_idle: Option<unsafe extern "C" fn(i32, bool)>,
    cpu_acquire: *const c_void,
    cpu_release: *const c_void,
    init_task: Option<unsafe extern "C" fn(TaskPtr, *mut InitTaskArgs) -> i32>,
    exit_task: Option<unsafe extern "C" fn(TaskPtr, *mut ExitTaskArgs)>,
    enable: Option<unsafe extern "C" fn(TaskPtr)>,
    disable: Option<unsafe extern "C" fn(TaskPtr)>,
    dump: *const c_void,
    dump_cpu: *const c_void,
    dump_task: *const c_void,
    cgroup_init: *const c_void,
    cgroup_exit: *const c_void,
    cgroup_prep_move: *const c_void,
    cgroup_move: *const c_void,
    cgroup_cancel_move: *const c_void,
    cgroup_set_weight: *const c_void,
    cpu_online: *const c_void,
    cpu_offline: *const c_void,
    init: Option<unsafe extern "C" fn() -> i32>,
    exit: *const c_void,
    dispatch_max_batch: u32,
    flags: u64,
    timeout_ms: u32,
    exit_dump_len: u32,
    hotplug_seq: u64,
    name: [c_char; 128],
}

#[repr(C)]
struct InitTaskArgs {
    fork: bool,
    cgroup: *mut c_void,
}

#[repr(C)]
struct ExitTaskArgs {
    cancelled: bool,
}

type Ctx = *mut c_void;

/// The shim's `struct schedlab_host`: what the object calls back.
#[repr(C)]
struct HostFns {
    abi: u32,
    ctx: Ctx,
    now: extern "C" fn(Ctx) -> u64,
    cpu: extern "C" fn(Ctx) -> i32,
    nr_cpus: extern "C" fn(Ctx) -> u32,
    create_dsq: extern "C" fn(Ctx, u64, i32) -> i32,
    destroy_dsq: extern "C" fn(Ctx, u64),
    select_cpu_dfl: extern "C" fn(Ctx, TaskPtr, i32, u64, *mut bool) -> i32,
    dispatch: extern "C" fn(Ctx, TaskPtr, u64, u64, u64, u64, bool),
    dispatch_nr_slots: extern "C" fn(Ctx) -> u32,
    dispatch_cancel: extern "C" fn(Ctx),
    consume: extern "C" fn(Ctx, u64) -> bool,
    kick_cpu: extern "C" fn(Ctx, i32, u64),
    dsq_nr_queued: extern "C" fn(Ctx, u64) -> i32,
    test_and_clear_cpu_idle: extern "C" fn(Ctx, i32) -> bool,
    pick_idle_cpu: extern "C" fn(Ctx, *const CCpumask, u64) -> i32,
    pick_any_cpu: extern "C" fn(Ctx, *const CCpumask, u64) -> i32,
    idle_mask: extern "C" fn(Ctx, *mut CCpumask, bool),
    any_distribute: extern "C" fn(Ctx, *const CCpumask, *const CCpumask) -> u32,
    task_running: extern "C" fn(Ctx, TaskPtr) -> bool,
    task_cpu: extern "C" fn(Ctx, TaskPtr) -> i32,
    task_from_pid: extern "C" fn(Ctx, i32) -> TaskPtr,
    cpuperf_cap: extern "C" fn(Ctx, i32) -> u32,
    cpuperf_cur: extern "C" fn(Ctx, i32) -> u32,
    cpuperf_set: extern "C" fn(Ctx, i32, u32),
    error: extern "C" fn(Ctx, *const c_char),
    exit: extern "C" fn(Ctx, i64, *const c_char),
    timer_start: extern "C" fn(Ctx, u32, u64),
    timer_cancel: extern "C" fn(Ctx, u32),
}

/// schedlab's side of a loaded object: the kfunc context of the running op and
/// every task's view.
struct Host {
    /// The running op's kfuncs; null between ops.
    kf: *mut Kf<'static>,
    /// Each task's `task_struct` view, by pid (boxed: C holds the addresses).
    tasks: Vec<Option<Box<CTask>>>,
    /// The tasks whose views the running op may have written.
    touched: Vec<Pid>,
    nr_cpus: u32,
}

impl Host {
    /// The running op's kfuncs.
    ///
    /// # Safety
    /// `ctx` is the `Host` of a loaded object, called back from within an op.
    unsafe fn of<'a>(ctx: Ctx) -> (&'a mut Host, Option<&'a mut Kf<'static>>) {
        let h = &mut *(ctx as *mut Host);
        let kf = h.kf;
        (h, kf.as_mut())
    }

    /// `p`'s view, created on first use.
    fn view(&mut self, p: Pid) -> TaskPtr {
        let i = p as usize;
        if self.tasks.len() <= i {
            self.tasks.resize_with(i + 1, || None);
        }
        let t = self.tasks[i].get_or_insert_with(|| {
            let mut comm = [0u8; 16];
            let name = format!("task-{p}");
            comm[..name.len().min(15)].copy_from_slice(&name.as_bytes()[..name.len().min(15)]);
            Box::new(CTask {
                pid: p as i32,
                tgid: p as i32,
                flags: 0,
                prio: 120,
                static_prio: 120,
                normal_prio: 120,
                policy: SCHED_EXT,
                nr_cpus_allowed: 0,
                migration_disabled: 0,
                comm,
                cpus_ptr: std::ptr::null(),
                cpus_mask: CCpumask { bits: [0; 16] },
                se: CSchedEntity {
                    exec_start: 0,
                    sum_exec_runtime: 0,
                    prev_sum_exec_runtime: 0,
                    vruntime: 0,
                },
                scx: CScxEntity {
                    dsq_vtime: 0,
                    slice: 0,
                    weight: 100,
                    flags: 0,
                    sticky_cpu: -1,
                    holding_cpu: -1,
                    runnable_at: 0,
                    core_sched_at: 0,
                    ddsp_dsq_id: 0,
                    ddsp_enq_flags: 0,
                    disallow: false,
                },
            })
        });
        t.cpus_ptr = &t.cpus_mask;
        &mut **t
    }

    /// Fill `p`'s view from the class (before C reads it).
    fn push(&mut self, kf: &Kf, p: Pid) -> TaskPtr {
        let ptr = self.view(p);
        let t = kf.task(p);
        // SAFETY: `ptr` is the live box of `p`.
        let c = unsafe { &mut *ptr };
        c.scx.weight = t.weight;
        c.scx.slice = t.slice;
        c.scx.dsq_vtime = t.dsq_vtime;
        c.cpus_mask.bits = t.cpus.to_words();
        c.nr_cpus_allowed = t.cpus.weight() as i32;
        c.flags = if t.exiting { PF_EXITING } else { 0 };
        c.se.sum_exec_runtime = t.sum_exec_runtime;
        if !self.touched.contains(&p) {
            self.touched.push(p);
        }
        ptr
    }

    /// Read back what C may have written of `p`.
    fn pull(&mut self, kf: &mut Kf, p: Pid) {
        let Some(Some(c)) = self.tasks.get(p as usize) else {
            return;
        };
        if !kf.has_task(p) {
            return;
        }
        let (slice, vtime, disallow) = (c.scx.slice, c.scx.dsq_vtime, c.scx.disallow);
        kf.set_slice(p, slice);
        kf.set_dsq_vtime(p, vtime);
        if disallow {
            kf.error(&format!(
                "p->scx.disallow on PID {p}: tasks kept in the fair class are not modelled"
            ));
        }
    }

    /// The pid of a task pointer C passed, checked against the views.
    fn pid_of(&self, kf: &mut Kf, p: TaskPtr) -> Option<Pid> {
        if p.is_null() {
            kf.error("NULL task pointer passed to a kfunc");
            return None;
        }
        // SAFETY: a pointer C got from schedlab (the verifier's guarantee in the
        // kernel); checked to be one of the views right after.
        let pid = unsafe { (*p).pid };
        let ok = pid >= 0
            && self
                .tasks
                .get(pid as usize)
                .and_then(Option::as_ref)
                .is_some_and(|b| std::ptr::eq(&**b, p))
            && kf.has_task(pid as Pid);
        if ok {
            Some(pid as Pid)
        } else {
            kf.error("invalid task pointer passed to a kfunc");
            None
        }
    }
}

fn mask_of(m: *const CCpumask) -> Option<CpuMask> {
    // SAFETY: C passes a `struct cpumask` it owns or got from schedlab.
    unsafe { m.as_ref() }.map(|m| CpuMask::from_words(m.bits))
}

macro_rules! with_kf {
    ($ctx:expr, $default:expr, |$h:ident, $kf:ident| $body:expr) => {{
        // SAFETY: `ctx` is this object's `Host`, called back during an op.
        let ($h, kf) = unsafe { Host::of($ctx) };
        match kf {
            Some($kf) => $body,
            None => $default,
        }
    }};
}

extern "C" fn h_now(ctx: Ctx) -> u64 {
    with_kf!(ctx, 0, |_h, kf| kf.now())
}
extern "C" fn h_cpu(ctx: Ctx) -> i32 {
    with_kf!(ctx, 0, |_h, kf| kf.cpu as i32)
}
extern "C" fn h_nr_cpus(ctx: Ctx) -> u32 {
    // SAFETY: as in `with_kf!`.
    unsafe { Host::of(ctx) }.0.nr_cpus
}
extern "C" fn h_create_dsq(ctx: Ctx, id: u64, _node: i32) -> i32 {
    with_kf!(ctx, -22, |_h, kf| match kf.create_dsq(id) {
        Ok(()) => 0,
        Err(e) => e,
    })
}
extern "C" fn h_destroy_dsq(ctx: Ctx, id: u64) {
    with_kf!(ctx, (), |_h, kf| kf.destroy_dsq(id))
}
extern "C" fn h_select_cpu_dfl(ctx: Ctx, p: TaskPtr, prev: i32, wf: u64, idle: *mut bool) -> i32 {
    with_kf!(ctx, prev, |h, kf| {
        let Some(pid) = h.pid_of(kf, p) else {
            return prev;
        };
        let (cpu, is_idle) = kf.select_cpu_dfl(pid, prev, wf);
        // SAFETY: the shim passes its own local.
        unsafe { *idle = is_idle };
        cpu
    })
}
extern "C" fn h_dispatch(
    ctx: Ctx,
    p: TaskPtr,
    dsq: u64,
    slice: u64,
    vtime: u64,
    flags: u64,
    vtime_ordered: bool,
) {
    with_kf!(ctx, (), |h, kf| {
        let Some(pid) = h.pid_of(kf, p) else {
            return;
        };
        h.pull(kf, pid);
        if vtime_ordered {
            kf.dispatch_vtime(pid, dsq, slice, vtime, flags);
        } else {
            kf.dispatch(pid, dsq, slice, flags);
        }
        h.push(kf, pid);
    })
}
extern "C" fn h_dispatch_nr_slots(ctx: Ctx) -> u32 {
    with_kf!(ctx, 0, |_h, kf| kf.dispatch_nr_slots())
}
extern "C" fn h_dispatch_cancel(ctx: Ctx) {
    with_kf!(ctx, (), |_h, kf| kf.dispatch_cancel())
}
extern "C" fn h_consume(ctx: Ctx, dsq: u64) -> bool {
    with_kf!(ctx, false, |_h, kf| kf.consume(dsq))
}
extern "C" fn h_kick_cpu(ctx: Ctx, cpu: i32, flags: u64) {
    with_kf!(ctx, (), |_h, kf| kf.kick_cpu(cpu, flags))
}
extern "C" fn h_dsq_nr_queued(ctx: Ctx, dsq: u64) -> i32 {
    with_kf!(ctx, -2, |_h, kf| kf.dsq_nr_queued(dsq))
}
extern "C" fn h_test_and_clear_cpu_idle(ctx: Ctx, cpu: i32) -> bool {
    with_kf!(ctx, false, |_h, kf| kf.test_and_clear_cpu_idle(cpu))
}
extern "C" fn h_pick_idle_cpu(ctx: Ctx, m: *const CCpumask, flags: u64) -> i32 {
    with_kf!(ctx, -16, |_h, kf| match mask_of(m) {
        Some(m) => kf.pick_idle_cpu(&m, flags),
        None => -16,
    })
}
extern "C" fn h_pick_any_cpu(ctx: Ctx, m: *const CCpumask, flags: u64) -> i32 {
    with_kf!(ctx, -16, |_h, kf| match mask_of(m) {
        Some(m) => kf.pick_any_cpu(&m, flags),
        None => -16,
    })
}
extern "C" fn h_idle_mask(ctx: Ctx, out: *mut CCpumask, smt: bool) {
    with_kf!(ctx, (), |_h, kf| {
        let m = kf.idle_cpumask(smt);
        // SAFETY: the shim passes its own buffer.
        unsafe { (*out).bits = m.to_words() };
    })
}
extern "C" fn h_any_distribute(ctx: Ctx, a: *const CCpumask, b: *const CCpumask) -> u32 {
    with_kf!(ctx, 1024, |_h, kf| {
        let Some(a) = mask_of(a) else {
            return 1024;
        };
        let b = mask_of(b).unwrap_or_else(|| (0..kf.nr_cpus()).collect());
        kf.any_and_distribute(&a, &b).map_or(1024, |c| c as u32)
    })
}
extern "C" fn h_task_running(ctx: Ctx, p: TaskPtr) -> bool {
    with_kf!(ctx, false, |h, kf| h
        .pid_of(kf, p)
        .is_some_and(|pid| kf.task_running(pid)))
}
extern "C" fn h_task_cpu(ctx: Ctx, p: TaskPtr) -> i32 {
    with_kf!(ctx, 0, |h, kf| h
        .pid_of(kf, p)
        .map_or(0, |pid| kf.task(pid).cpu as i32))
}
extern "C" fn h_task_from_pid(ctx: Ctx, pid: i32) -> TaskPtr {
    with_kf!(ctx, std::ptr::null_mut(), |h, kf| {
        if pid < 0 || !kf.has_task(pid as Pid) {
            return std::ptr::null_mut();
        }
        h.push(kf, pid as Pid)
    })
}
extern "C" fn h_cpuperf(_ctx: Ctx, _cpu: i32) -> u32 {
    // `SCX_CPUPERF_ONE`: capacity and frequency scaling are not shown to ext
    // schedulers yet (docs/kernel-mapping.md §9).
    1024
}
extern "C" fn h_cpuperf_set(_ctx: Ctx, _cpu: i32, _perf: u32) {}
fn c_str(s: *const c_char) -> String {
    if s.is_null() {
        return String::new();
    }
    // SAFETY: the shim passes a NUL-terminated buffer of its own.
    unsafe { std::ffi::CStr::from_ptr(s) }
        .to_string_lossy()
        .into_owned()
}
extern "C" fn h_error(ctx: Ctx, msg: *const c_char) {
    with_kf!(ctx, (), |_h, kf| kf.error(&c_str(msg)))
}
extern "C" fn h_exit(ctx: Ctx, code: i64, msg: *const c_char) {
    with_kf!(ctx, (), |_h, kf| kf.exit(code, &c_str(msg)))
}

extern "C" fn h_timer_start(ctx: Ctx, id: u32, at: u64) {
    with_kf!(ctx, (), |_h, kf| kf.timer_start(id, at))
}
extern "C" fn h_timer_cancel(ctx: Ctx, id: u32) {
    with_kf!(ctx, (), |_h, kf| kf.timer_cancel(id))
}

/// A loaded scheduler object: its ops table and schedlab's side of it.
pub struct BpfScheduler {
    ops: COps,
    name: String,
    implemented: u32,
    host: Box<Host>,
    /// Kept alive: C holds its address.
    _fns: Box<HostFns>,
    detach: unsafe extern "C" fn(),
    timer_fire: unsafe extern "C" fn(u32),
    lib: Option<libloading::Library>,
}

impl std::fmt::Debug for BpfScheduler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BpfScheduler")
            .field("name", &self.name)
            .field("implemented", &self.implemented)
            .finish()
    }
}

impl Drop for BpfScheduler {
    fn drop(&mut self) {
        // SAFETY: the object's own clean-up, before it is unmapped.
        unsafe { (self.detach)() };
        drop(self.lib.take());
    }
}

/// The shim's layout as schedlab sees it (`schedlab_shim_layout`'s order).
fn rust_layout() -> [u64; 16] {
    use std::mem::{offset_of, size_of};
    [
        size_of::<CTask>() as u64,
        offset_of!(CTask, pid) as u64,
        offset_of!(CTask, flags) as u64,
        offset_of!(CTask, nr_cpus_allowed) as u64,
        offset_of!(CTask, comm) as u64,
        offset_of!(CTask, cpus_ptr) as u64,
        offset_of!(CTask, cpus_mask) as u64,
        (offset_of!(CTask, se) + offset_of!(CSchedEntity, sum_exec_runtime)) as u64,
        (offset_of!(CTask, scx) + offset_of!(CScxEntity, dsq_vtime)) as u64,
        (offset_of!(CTask, scx) + offset_of!(CScxEntity, slice)) as u64,
        (offset_of!(CTask, scx) + offset_of!(CScxEntity, weight)) as u64,
        (offset_of!(CTask, scx) + offset_of!(CScxEntity, disallow)) as u64,
        size_of::<COps>() as u64,
        offset_of!(COps, dispatch_max_batch) as u64,
        offset_of!(COps, name) as u64,
        size_of::<HostFns>() as u64,
    ]
}

/// Set in the sandbox's child once its filter is on ([`set_contained`]): only
/// then may a scheduler's code run.
static CONTAINED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The object the sandbox's child mapped before its filter went on, by path.
static PRELOADED: std::sync::Mutex<Option<(PathBuf, libloading::Library)>> =
    std::sync::Mutex::new(None);

/// In the sandbox's child, before its filter is on: map a private copy of
/// `object` (the dynamic loader maps one instance per file, and each run needs
/// its own globals and maps). [`check_object`] first: mapping runs none of the
/// scheduler's code.
pub(crate) fn preload(object: &Path) -> Result<(), String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", object.display());
    check_object(object).map_err(|e| err(&e))?;
    let copy = tempfile::Builder::new()
        .prefix("schedlab-scx-")
        .suffix(".so")
        .tempfile()
        .map_err(|e| err(&e))?;
    std::fs::copy(object, copy.path()).map_err(|e| err(&e))?;
    // SAFETY: check_object found no code that runs at load (no `_init`,
    // constructor or ifunc), and the shim has none; the object was built by
    // `compile` against this shim.
    let lib = unsafe { libloading::Library::new(copy.path()) }.map_err(|e| err(&e))?;
    drop(copy);
    *PRELOADED.lock().unwrap_or_else(|p| p.into_inner()) = Some((object.to_path_buf(), lib));
    Ok(())
}

/// The sandbox's filter is on in this process: a preloaded scheduler may run.
pub(crate) fn set_contained() {
    CONTAINED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// Start the instance of the compiled scheduler `object` that `preload` mapped,
/// for a machine of `nr_cpus` CPUs. Only inside the sandbox
/// (`experiment::sandbox`): anywhere else it is an error, never a load.
pub fn load(object: &Path, nr_cpus: usize) -> Result<BpfScheduler, String> {
    let err = |e: &dyn std::fmt::Display| format!("{}: {e}", object.display());
    if !CONTAINED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(err(&"a C scheduler runs only inside schedlab's sandbox"));
    }
    let lib = match PRELOADED.lock().unwrap_or_else(|p| p.into_inner()).take() {
        Some((p, lib)) if p == object => lib,
        _ => return Err(err(&"not mapped before the sandbox's filter went on")),
    };
    // SAFETY: symbols of the shim, with the signatures schedlab_shim.c gives them.
    let (layout_fn, attach, detach, timer_fire) = unsafe {
        let layout: libloading::Symbol<unsafe extern "C" fn(*mut u64)> =
            lib.get(b"schedlab_shim_layout\0").map_err(|e| err(&e))?;
        let attach: libloading::Symbol<unsafe extern "C" fn(*const HostFns) -> *const COps> =
            lib.get(b"schedlab_shim_attach\0").map_err(|e| err(&e))?;
        let detach: libloading::Symbol<unsafe extern "C" fn()> =
            lib.get(b"schedlab_shim_detach\0").map_err(|e| err(&e))?;
        let fire: libloading::Symbol<unsafe extern "C" fn(u32)> = lib
            .get(b"schedlab_shim_timer_fire\0")
            .map_err(|e| err(&e))?;
        (*layout, *attach, *detach, *fire)
    };
    let mut c_layout = [0u64; 16];
    // SAFETY: the shim writes 16 values.
    unsafe { layout_fn(c_layout.as_mut_ptr()) };
    if c_layout != rust_layout() {
        return Err(err(&format_args!(
            "the shim's layout {c_layout:?} is not schedlab's {:?} (rebuild the object)",
            rust_layout()
        )));
    }
    let mut host = Box::new(Host {
        kf: std::ptr::null_mut(),
        tasks: Vec::new(),
        touched: Vec::new(),
        nr_cpus: nr_cpus as u32,
    });
    let fns = Box::new(HostFns {
        abi: SHIM_ABI,
        ctx: &mut *host as *mut Host as Ctx,
        now: h_now,
        cpu: h_cpu,
        nr_cpus: h_nr_cpus,
        create_dsq: h_create_dsq,
        destroy_dsq: h_destroy_dsq,
        select_cpu_dfl: h_select_cpu_dfl,
        dispatch: h_dispatch,
        dispatch_nr_slots: h_dispatch_nr_slots,
        dispatch_cancel: h_dispatch_cancel,
        consume: h_consume,
        kick_cpu: h_kick_cpu,
        dsq_nr_queued: h_dsq_nr_queued,
        test_and_clear_cpu_idle: h_test_and_clear_cpu_idle,
        pick_idle_cpu: h_pick_idle_cpu,
        pick_any_cpu: h_pick_any_cpu,
        idle_mask: h_idle_mask,
        any_distribute: h_any_distribute,
        task_running: h_task_running,
        task_cpu: h_task_cpu,
        task_from_pid: h_task_from_pid,
        cpuperf_cap: h_cpuperf,
        cpuperf_cur: h_cpuperf,
        cpuperf_set: h_cpuperf_set,
        error: h_error,
        exit: h_exit,
        timer_start: h_timer_start,
        timer_cancel: h_timer_cancel,
    });
    // SAFETY: `fns` outlives the object (dropped after `detach`).
    let ops_ptr = unsafe { attach(&*fns) };
    if ops_ptr.is_null() {
        return Err(err(&"the shim refused schedlab's ABI version"));
    }
    // SAFETY: the generated setter (no arguments), before any op runs, as a
    // loader writes its skeleton's globals before `bpf_object__load`.
    unsafe {
        let set: libloading::Symbol<unsafe extern "C" fn()> =
            lib.get(b"schedlab_set_globals\0").map_err(|e| err(&e))?;
        set();
    }
    // SAFETY: the scheduler's ops table, a static of the object.
    let ops = unsafe { *ops_ptr };
    // SAFETY: `name` is a char array, NUL-terminated by C's initialisation.
    let name = c_str(ops.name.as_ptr());
    let mut implemented = op::INIT_TASK | op::EXIT_TASK;
    for (set, bit) in [
        (ops.select_cpu.is_some(), op::SELECT_CPU),
        (ops.enqueue.is_some(), op::ENQUEUE),
        (ops.dequeue.is_some(), op::DEQUEUE),
        (ops.dispatch.is_some(), op::DISPATCH),
        (ops.tick.is_some(), op::TICK),
        (ops.runnable.is_some(), op::RUNNABLE),
        (ops.running.is_some(), op::RUNNING),
        (ops.stopping.is_some(), op::STOPPING),
        (ops.quiescent.is_some(), op::QUIESCENT),
        (ops.yield_.is_some(), op::YIELD),
        (ops.set_weight.is_some(), op::SET_WEIGHT),
        (ops.set_cpumask.is_some(), op::SET_CPUMASK),
        (ops.update_idle.is_some(), op::UPDATE_IDLE),
        (ops.enable.is_some(), op::ENABLE),
        (ops.init.is_some(), op::INIT),
    ] {
        if set {
            implemented |= bit;
        }
    }
    Ok(BpfScheduler {
        ops,
        name,
        implemented,
        host,
        _fns: fns,
        detach,
        timer_fire,
        lib: Some(lib),
    })
}

impl BpfScheduler {
    /// Run one op with `kf` as its kfunc context, the views of `tasks` filled
    /// first and every view it touched read back after.
    fn call<R>(&mut self, kf: &mut Kf, tasks: &[Pid], f: impl FnOnce(&COps, &[TaskPtr]) -> R) -> R {
        let mut ptrs = [std::ptr::null_mut(); 2];
        for (i, &p) in tasks.iter().enumerate() {
            ptrs[i] = self.host.push(kf, p);
        }
        // SAFETY: the pointer is used only by callbacks during `f`, while `kf`
        // is not otherwise used; it is cleared before `kf` is used again.
        self.host.kf = std::ptr::from_mut(kf).cast::<Kf<'static>>();
        let r = f(&self.ops, &ptrs[..tasks.len()]);
        self.host.kf = std::ptr::null_mut();
        let touched = std::mem::take(&mut self.host.touched);
        for &p in &touched {
            self.host.pull(kf, p);
        }
        self.host.touched = touched;
        self.host.touched.clear();
        r
    }
}

impl ScxOps for BpfScheduler {
    fn name(&self) -> &str {
        &self.name
    }

    fn implemented(&self) -> u32 {
        self.implemented
    }

    fn flags(&self) -> u64 {
        self.ops.flags
    }

    fn dispatch_max_batch(&self) -> usize {
        self.ops.dispatch_max_batch as usize
    }

    fn timeout_ms(&self) -> u32 {
        self.ops.timeout_ms
    }

    fn init(&mut self, kf: &mut Kf) -> Result<(), i32> {
        let Some(f) = self.ops.init else {
            return Ok(());
        };
        // SAFETY (each op below): the scheduler's function, called with views
        // schedlab owns, as the kernel calls it.
        let r = self.call(kf, &[], |_, _| unsafe { f() });
        if r < 0 {
            Err(r)
        } else {
            Ok(())
        }
    }

    fn select_cpu(&mut self, kf: &mut Kf, p: Pid, prev_cpu: i32, wake_flags: u64) -> i32 {
        let f = self.ops.select_cpu.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], prev_cpu, wake_flags) })
    }

    fn enqueue(&mut self, kf: &mut Kf, p: Pid, enq_flags: u64) {
        let f = self.ops.enqueue.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], enq_flags) })
    }

    fn dequeue(&mut self, kf: &mut Kf, p: Pid, deq_flags: u64) {
        let f = self.ops.dequeue.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], deq_flags) })
    }

    fn dispatch(&mut self, kf: &mut Kf, cpu: i32, prev: Option<Pid>) {
        let f = self.ops.dispatch.expect("implemented");
        // A prev that has exited has left the class here (its ops.exit_task ran
        // at the exit); the kernel still passes its task_struct, schedlab NULL.
        match prev.filter(|&p| kf.has_task(p)) {
            Some(p) => self.call(kf, &[p], |_, t| unsafe { f(cpu, t[0]) }),
            None => self.call(kf, &[], |_, _| unsafe { f(cpu, std::ptr::null_mut()) }),
        }
    }

    fn tick(&mut self, kf: &mut Kf, p: Pid) {
        let f = self.ops.tick.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0]) })
    }

    fn runnable(&mut self, kf: &mut Kf, p: Pid, enq_flags: u64) {
        let f = self.ops.runnable.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], enq_flags) })
    }

    fn running(&mut self, kf: &mut Kf, p: Pid) {
        let f = self.ops.running.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0]) })
    }

    fn stopping(&mut self, kf: &mut Kf, p: Pid, runnable: bool) {
        let f = self.ops.stopping.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], runnable) })
    }

    fn quiescent(&mut self, kf: &mut Kf, p: Pid, deq_flags: u64) {
        let f = self.ops.quiescent.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], deq_flags) })
    }

    fn yield_(&mut self, kf: &mut Kf, from: Pid) -> bool {
        let f = self.ops.yield_.expect("implemented");
        self.call(kf, &[from], |_, t| unsafe { f(t[0], std::ptr::null_mut()) })
    }

    fn set_weight(&mut self, kf: &mut Kf, p: Pid, weight: u32) {
        let f = self.ops.set_weight.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0], weight) })
    }

    fn set_cpumask(&mut self, kf: &mut Kf, p: Pid) {
        let f = self.ops.set_cpumask.expect("implemented");
        // SAFETY: the view was just filled (its `cpus_ptr` points into it).
        self.call(kf, &[p], |_, t| unsafe { f(t[0], (*t[0]).cpus_ptr) })
    }

    fn update_idle(&mut self, kf: &mut Kf, cpu: i32, idle: bool) {
        let f = self.ops.update_idle.expect("implemented");
        self.call(kf, &[], |_, _| unsafe { f(cpu, idle) })
    }

    fn init_task(&mut self, kf: &mut Kf, p: Pid, fork: bool) -> Result<(), i32> {
        let Some(f) = self.ops.init_task else {
            return Ok(());
        };
        let mut args = InitTaskArgs {
            fork,
            cgroup: std::ptr::null_mut(),
        };
        let r = self.call(kf, &[p], |_, t| unsafe { f(t[0], &mut args) });
        if r < 0 {
            Err(r)
        } else {
            Ok(())
        }
    }

    fn exit_task(&mut self, kf: &mut Kf, p: Pid) {
        // `scx_ops_exit_task`: `ops.disable` for an enabled task, then
        // `ops.exit_task`; the view goes with the task.
        let (disable, exit) = (self.ops.disable, self.ops.exit_task);
        if disable.is_some() || exit.is_some() {
            let mut args = ExitTaskArgs { cancelled: false };
            self.call(kf, &[p], |_, t| unsafe {
                if let Some(d) = disable {
                    d(t[0]);
                }
                if let Some(e) = exit {
                    e(t[0], &mut args);
                }
            });
        }
        if let Some(slot) = self.host.tasks.get_mut(p as usize) {
            *slot = None;
        }
    }

    fn enable(&mut self, kf: &mut Kf, p: Pid) {
        let f = self.ops.enable.expect("implemented");
        self.call(kf, &[p], |_, t| unsafe { f(t[0]) })
    }

    fn timer(&mut self, kf: &mut Kf, id: u32) {
        let f = self.timer_fire;
        self.call(kf, &[], |_, _| unsafe { f(id) })
    }
}
