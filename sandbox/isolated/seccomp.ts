/**
 * The seccomp filter every sandbox runs under: a classic BPF program, made here (no compiler, no download) and handed
 * to bwrap with `--seccomp FD`, which loads it just before it executes the sandbox's first program, after its own
 * namespaces and mounts are made. It refuses (EPERM) the system calls agents' code never needs and that widen what
 * the kernel exposes to it: io_uring, the kernel keyring, eBPF, perf events, kernel modules, kexec, mounting and
 * namespaces, userfaultfd, swap, clocks, reboot and the like; and the terminal ioctls that type into a terminal
 * (TIOCSTI, TIOCLINUX), so nothing can push input to the shell's terminal. A 32-bit (compat) system call, or on
 * x86-64 an x32 one, kills the process: the deny list is by native number only.
 */

/** Each architecture's audit number and the numbers of the denied calls (from the kernel's syscall tables). */
interface ArchTable {
  audit: number
  /** x86-64 marks x32 calls with this bit; they are refused outright. */
  x32Bit?: number
  ioctl: number
  denied: Record<string, number>
}

/** Calls whose numbers are the same on every architecture (the unified table, 403 onwards). */
const UNIFIED: Record<string, number> = {
  io_uring_setup: 425,
  io_uring_enter: 426,
  io_uring_register: 427,
  open_tree: 428,
  move_mount: 429,
  fsopen: 430,
  fsconfig: 431,
  fsmount: 432,
  fspick: 433,
  mount_setattr: 442,
  quotactl_fd: 443,
}

const X86_64: ArchTable = {
  audit: 0xc000003e,
  x32Bit: 0x40000000,
  ioctl: 16,
  denied: {
    ...UNIFIED,
    keyctl: 250,
    add_key: 248,
    request_key: 249,
    bpf: 321,
    perf_event_open: 298,
    init_module: 175,
    finit_module: 313,
    delete_module: 176,
    kexec_load: 246,
    kexec_file_load: 320,
    mount: 165,
    umount2: 166,
    pivot_root: 155,
    unshare: 272,
    setns: 308,
    userfaultfd: 323,
    swapon: 167,
    swapoff: 168,
    reboot: 169,
    syslog: 103,
    acct: 163,
    settimeofday: 164,
    clock_settime: 227,
    clock_adjtime: 305,
    adjtimex: 159,
    quotactl: 179,
    open_by_handle_at: 304,
    fanotify_init: 300,
    lookup_dcookie: 212,
    vhangup: 153,
    iopl: 172,
    ioperm: 173,
    uselib: 134,
    _sysctl: 156,
    nfsservctl: 180,
  },
}

const AARCH64: ArchTable = {
  audit: 0xc00000b7,
  ioctl: 29,
  denied: {
    ...UNIFIED,
    keyctl: 219,
    add_key: 217,
    request_key: 218,
    bpf: 280,
    perf_event_open: 241,
    init_module: 105,
    finit_module: 273,
    delete_module: 106,
    kexec_load: 104,
    kexec_file_load: 294,
    mount: 40,
    umount2: 39,
    pivot_root: 41,
    unshare: 97,
    setns: 268,
    userfaultfd: 282,
    swapon: 224,
    swapoff: 225,
    reboot: 142,
    syslog: 116,
    acct: 89,
    settimeofday: 170,
    clock_settime: 112,
    clock_adjtime: 266,
    adjtimex: 171,
    quotactl: 60,
    open_by_handle_at: 265,
    fanotify_init: 262,
    lookup_dcookie: 18,
    vhangup: 58,
    nfsservctl: 42,
  },
}

/** ioctl requests refused: faking terminal input, and the Linux console's equivalent. */
const DENIED_IOCTLS = { TIOCSTI: 0x5412, TIOCLINUX: 0x541c }

/** The names of the denied calls, for the documentation and the start-up line. */
export const DENIED_SYSCALLS: readonly string[] = Object.keys(X86_64.denied)

// Classic BPF, as the kernel's filter.h spells it.
const LD_W_ABS = 0x20
const JEQ_K = 0x15
const JGE_K = 0x35
const RET_K = 0x06
const RET_ALLOW = 0x7fff0000
const RET_KILL_PROCESS = 0x80000000
const RET_ERRNO_EPERM = 0x00050000 | 1
// struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little-endian: args[1]'s low half at 24).
const OFF_NR = 0
const OFF_ARCH = 4
const OFF_ARG1_LOW = 24

interface Insn {
  code: number
  jt: number
  jf: number
  k: number
}

/**
 * The filter for `arch` (node's `process.arch`) as the bytes of a `struct sock_filter` array, what bwrap reads from
 * `--seccomp FD`; undefined where there is no table (the sandbox then runs without one, and says so).
 */
export function seccompFilter(arch: string = process.arch): Buffer | undefined {
  if (!built.has(arch)) built.set(arch, build(arch))
  return built.get(arch)
}

const built = new Map<string, Buffer | undefined>()

function build(arch: string): Buffer | undefined {
  const table = arch === 'x64' ? X86_64 : arch === 'arm64' ? AARCH64 : undefined
  if (!table) return undefined
  const numbers = [...new Set(Object.values(table.denied))]
  // Layout: arch check, x32 check, one compare per denied call, the ioctl branch, then the three returns.
  const prog: Array<Insn | { jumpTo: 'deny' | 'allow' | 'kill'; code: number; k: number; onTrue: boolean }> = []
  const at = (code: number, k: number) => prog.push({ code, jt: 0, jf: 0, k })
  const jump = (code: number, k: number, jumpTo: 'deny' | 'allow' | 'kill', onTrue = true) => prog.push({ jumpTo, code, k, onTrue })
  at(LD_W_ABS, OFF_ARCH)
  jump(JEQ_K, table.audit, 'kill', false)
  at(LD_W_ABS, OFF_NR)
  if (table.x32Bit) jump(JGE_K, table.x32Bit, 'kill')
  for (const nr of numbers) jump(JEQ_K, nr, 'deny')
  jump(JEQ_K, table.ioctl, 'allow', false)
  at(LD_W_ABS, OFF_ARG1_LOW)
  for (const request of Object.values(DENIED_IOCTLS)) jump(JEQ_K, request, 'deny')
  const target = { allow: prog.length, deny: prog.length + 1, kill: prog.length + 2 }
  const out: Insn[] = prog.map((insn, i) => {
    if (!('jumpTo' in insn)) return insn
    const offset = target[insn.jumpTo] - (i + 1)
    if (offset > 255) throw new Error('seccomp filter: a jump is out of range')
    return { code: insn.code, k: insn.k, jt: insn.onTrue ? offset : 0, jf: insn.onTrue ? 0 : offset }
  })
  out.push({ code: RET_K, jt: 0, jf: 0, k: RET_ALLOW }, { code: RET_K, jt: 0, jf: 0, k: RET_ERRNO_EPERM }, { code: RET_K, jt: 0, jf: 0, k: RET_KILL_PROCESS })
  const bytes = Buffer.alloc(out.length * 8)
  out.forEach((insn, i) => {
    bytes.writeUInt16LE(insn.code, i * 8)
    bytes.writeUInt8(insn.jt, i * 8 + 2)
    bytes.writeUInt8(insn.jf, i * 8 + 3)
    bytes.writeUInt32LE(insn.k >>> 0, i * 8 + 4)
  })
  return bytes
}
