//! The egress policy as the kernel runs it: cgroup BPF programs (`CGROUP_SOCK_ADDR`, on IPv4 and
//! IPv6 connect and UDP sendmsg) written as BPF instructions, as systemd writes its IP firewall
//! (src/core/bpf-firewall.c) — no compiler, no object file. A program reads the destination of
//! the connect or send (`struct bpf_sock_addr`), lets it through if an allowed network (and
//! port) holds it, refuses it (`EPERM` to the caller) if a refused network does, and lets it
//! through otherwise; an IPv4-mapped IPv6 destination is judged by the IPv4 rules.
//!
//! Invariants: pure — a [`Policy`] in, instructions out (`egress::kernel` loads them); the
//! metadata addresses are refused first, whatever is allowed; then allowed rules are tried
//! before the other refused ones; every jump lands inside the program, forward only (the
//! verifier's rule), and every path ends in an exit with 0 (refuse) or 1 (let through).

use super::ranges::{mask_v4, mask_v6, Net, Reach};
use std::net::{Ipv4Addr, Ipv6Addr};

/// What a crawl's hooks may reach: allowed networks first (each on any port, or one), then the
/// networks refused, each with why.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Policy {
    pub allowed_v4: Vec<(Net<Ipv4Addr>, Option<u16>)>,
    pub allowed_v6: Vec<(Net<Ipv6Addr>, Option<u16>)>,
    pub refused_v4: Vec<(Net<Ipv4Addr>, Reach)>,
    pub refused_v6: Vec<(Net<Ipv6Addr>, Reach)>,
}

/// One BPF instruction, as the kernel reads it (`struct bpf_insn`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Insn {
    pub code: u8,
    /// The destination register (low four bits) and the source register (high four bits).
    pub regs: u8,
    pub off: i16,
    pub imm: i32,
}

// Opcodes (linux/bpf_common.h, linux/bpf.h).
const LDX_MEM_W: u8 = 0x61;
const STX_MEM_W: u8 = 0x63;
const ST_MEM_W: u8 = 0x62;
const LD_IMM64: u8 = 0x18;
const ADD64_K: u8 = 0x07;
const END_TO_BE: u8 = 0xdc;
const JEQ64_K: u8 = 0x15;
const CALL: u8 = 0x85;
const MOV64_X: u8 = 0xbf;
const MOV64_K: u8 = 0xb7;
const MOV32_X: u8 = 0xbc;
const AND32_K: u8 = 0x54;
const JNE32_K: u8 = 0x56;
/// `lock *(u64 *)(dst + off) += src` (BPF_STX | BPF_ATOMIC | BPF_DW, imm BPF_ADD).
const ATOMIC_ADD64: u8 = 0xdb;
const EXIT: u8 = 0x95;

// Registers: the context on entry, kept in a callee-saved one; the destination's words; scratch.
const R0: u8 = 0;
const CTX_IN: u8 = 1;
const CTX: u8 = 6;
const PORT: u8 = 7;
const SCRATCH: u8 = 8;
/// The IPv6 destination's four words (the IPv4 one in the first).
const WORDS: [u8; 4] = [2, 3, 4, 5];

// Offsets in `struct bpf_sock_addr`.
const USER_IP4: i16 = 4;
const USER_IP6: i16 = 8;
const USER_PORT: i16 = 24;
// In `struct bpf_sock_ops`: the callback, and a socket's own port (host order).
const SOCK_OPS_OP: i16 = 0;
const SOCK_OPS_LOCAL_PORT: i16 = 68;
const SOCK_OPS_TCP_LISTEN_CB: i32 = 11;
// The frame pointer, helpers, and how an instruction names a map (by its descriptor).
const FP: u8 = 10;
const MAP_LOOKUP_ELEM: i32 = 1;
const MAP_UPDATE_ELEM: i32 = 2;
const PSEUDO_MAP_FD: u8 = 1;

/// A map of the kernel's, named by its descriptor in the program that uses it.
pub type MapFd = i32;

/// The maps a crawl's connect programs use: the ports its own processes listen on (let through
/// on loopback), and the counts of what was refused, one per [`Reach`] (its index in
/// [`Reach::ALL`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct Maps {
    pub listeners: Option<MapFd>,
    pub refusals: Option<MapFd>,
}

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: dst | (src << 4),
        off,
        imm,
    }
}

/// A 32-bit word as `struct bpf_sock_addr` holds it (network order) and a 4-byte load reads it.
fn wire_word(bytes: [u8; 4]) -> i32 {
    i32::from_ne_bytes(bytes)
}

/// `port` as the 4-byte load of `user_port` reads it.
fn wire_port(port: u16) -> i32 {
    let [high, low] = port.to_be_bytes();
    wire_word([high, low, 0, 0])
}

/// A network's words and masks as the program compares them: (mask, masked address) per word.
fn words_v4(net: &Net<Ipv4Addr>) -> Vec<(i32, i32)> {
    let mask = mask_v4(net.prefix);
    vec![(
        wire_word(mask.to_be_bytes()),
        wire_word((u32::from(net.addr) & mask).to_be_bytes()),
    )]
}

fn words_v6(net: &Net<Ipv6Addr>) -> Vec<(i32, i32)> {
    let mask = mask_v6(net.prefix).to_be_bytes();
    let addr = (u128::from(net.addr) & mask_v6(net.prefix)).to_be_bytes();
    (0..4)
        .map(|i| {
            let word =
                |b: &[u8; 16]| wire_word([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
            (word(&mask), word(&addr))
        })
        .collect()
}

/// The tests of a rule: whether every word (of `registers`) masked is the network's, and the
/// port is `port` (if one is named). Each test that fails jumps to the end of them; [`then`]
/// puts what runs when all pass there.
fn matching(registers: &[u8], words: &[(i32, i32)], port: Option<u16>) -> Vec<Insn> {
    let mut code = Vec::new();
    for (&register, &(mask, addr)) in registers.iter().zip(words) {
        if mask != 0 {
            code.extend([
                insn(MOV32_X, SCRATCH, register, 0, 0),
                insn(AND32_K, SCRATCH, 0, 0, mask),
                insn(JNE32_K, SCRATCH, 0, 0, addr),
            ]);
        }
    }
    if let Some(port) = port {
        code.push(insn(JNE32_K, PORT, 0, 0, wire_port(port)));
    }
    let length = code.len();
    for (at, test) in code.iter_mut().enumerate() {
        if test.code == JNE32_K {
            test.off = (length - at - 1) as i16;
        }
    }
    code
}

/// The `tests` of [`matching`], then `body`, run when they all pass: a failed test jumps past
/// the body.
fn then(mut tests: Vec<Insn>, body: &[Insn]) -> Vec<Insn> {
    for test in tests.iter_mut().filter(|t| t.code == JNE32_K) {
        test.off += body.len() as i16;
    }
    tests.extend_from_slice(body);
    tests
}

/// A rule: if the destination is in the network (and on the port), the program exits with
/// `verdict`; else it goes on after the rule.
fn rule(registers: &[u8], words: &[(i32, i32)], port: Option<u16>, verdict: i32) -> Vec<Insn> {
    let verdict = [insn(MOV64_K, R0, 0, 0, verdict), insn(EXIT, 0, 0, 0, 0)];
    then(matching(registers, words, port), &verdict)
}

/// A refused network: if the destination is in it, the count of `reach` goes up by one (in the
/// `refusals` map, if there is one) and the program exits with 0 (refused).
fn refused(
    registers: &[u8],
    words: &[(i32, i32)],
    reach: Reach,
    refusals: Option<MapFd>,
) -> Vec<Insn> {
    let mut body = Vec::new();
    if let Some(map) = refusals {
        body.push(insn(ST_MEM_W, FP, 0, -4, reach.index() as i32));
        body.extend(load_map(map));
        body.extend([
            insn(MOV64_X, 2, FP, 0, 0),
            insn(ADD64_K, 2, 0, 0, -4),
            insn(CALL, 0, 0, 0, MAP_LOOKUP_ELEM),
            // (No count there: refused all the same.)
            insn(JEQ64_K, R0, 0, 2, 0),
            insn(MOV64_K, 1, 0, 0, 1),
            insn(ATOMIC_ADD64, R0, 1, 0, 0),
        ]);
    }
    body.extend([insn(MOV64_K, R0, 0, 0, 0), insn(EXIT, 0, 0, 0, 0)]);
    then(matching(registers, words, None), &body)
}

/// `r1 = map`: the two instructions of a 64-bit load of a map's descriptor.
fn load_map(map: MapFd) -> [Insn; 2] {
    [
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map),
        insn(0, 0, 0, 0, 0),
    ]
}

/// If the destination (in `registers`) is loopback (`loopback`'s words) and its port is in the
/// map of the crawl's own listeners, the program exits with 1 (a crawl's hooks reach what its
/// own processes listen on: its browser's DevTools port). The helper call clobbers r1–r5, so
/// `reload` loads the destination again after it.
fn own_listener(
    registers: &[u8],
    loopback: &[(i32, i32)],
    map: MapFd,
    reload: &[Insn],
) -> Vec<Insn> {
    let mut body = vec![
        insn(MOV32_X, SCRATCH, PORT, 0, 0),
        insn(END_TO_BE, SCRATCH, 0, 0, 16),
        insn(STX_MEM_W, FP, SCRATCH, -4, 0),
    ];
    body.extend(load_map(map));
    body.extend([
        insn(MOV64_X, 2, FP, 0, 0),
        insn(ADD64_K, 2, 0, 0, -4),
        insn(CALL, 0, 0, 0, MAP_LOOKUP_ELEM),
    ]);
    body.extend_from_slice(reload);
    body.extend([
        insn(JEQ64_K, R0, 0, 2, 0),
        insn(MOV64_K, R0, 0, 0, 1),
        insn(EXIT, 0, 0, 0, 0),
    ]);
    then(matching(registers, loopback, None), &body)
}

/// The `SOCK_OPS` program of a crawl's cgroup: each socket that starts listening there puts its
/// port in `map`, the crawl's own listeners.
pub fn program_listeners(map: MapFd) -> Vec<Insn> {
    let mut code = vec![
        insn(LDX_MEM_W, 2, CTX_IN, SOCK_OPS_OP, 0),
        insn(JNE32_K, 2, 0, 0, SOCK_OPS_TCP_LISTEN_CB),
        insn(LDX_MEM_W, 2, CTX_IN, SOCK_OPS_LOCAL_PORT, 0),
        insn(STX_MEM_W, FP, 2, -4, 0),
        insn(ST_MEM_W, FP, 0, -8, 1),
    ];
    code.extend(load_map(map));
    code.extend([
        insn(MOV64_X, 2, FP, 0, 0),
        insn(ADD64_K, 2, 0, 0, -4),
        insn(MOV64_X, 3, FP, 0, 0),
        insn(ADD64_K, 3, 0, 0, -8),
        insn(MOV64_K, 4, 0, 0, 0),
        insn(CALL, 0, 0, 0, MAP_UPDATE_ELEM),
    ]);
    code.extend(let_through());
    // (Not a listen: straight to the end.)
    code[1].off = (code.len() - 2 - 2) as i16;
    code
}

/// The program for IPv4 destinations (connect4, sendmsg4); with the map of the crawl's own
/// listeners, loopback ports in it are let through; with its refusals map, each refusal counted.
pub fn program_v4(policy: &Policy, maps: Maps) -> Vec<Insn> {
    let load = insn(LDX_MEM_W, WORDS[0], CTX, USER_IP4, 0);
    let mut code = vec![
        insn(MOV64_X, CTX, CTX_IN, 0, 0),
        load,
        insn(LDX_MEM_W, PORT, CTX, USER_PORT, 0),
    ];
    code.extend(rules_v4(policy, WORDS[0], maps, &[load]));
    code.extend(let_through());
    code
}

/// 127.0.0.0/8, as the rules compare it.
fn loopback_v4() -> Vec<(i32, i32)> {
    words_v4(&Net {
        addr: Ipv4Addr::new(127, 0, 0, 0),
        prefix: 8,
    })
}

/// The IPv4 rules, on the destination in `register` (`reload` loads it again).
fn rules_v4(policy: &Policy, register: u8, maps: Maps, reload: &[Insn]) -> Vec<Insn> {
    let (never, others): (Vec<_>, Vec<_>) =
        (policy.refused_v4.iter()).partition(|(_, reach)| *reach == Reach::Metadata);
    let mut code = Vec::new();
    for (net, reach) in &never {
        code.extend(refused(&[register], &words_v4(net), *reach, maps.refusals));
    }
    if let Some(map) = maps.listeners {
        code.extend(own_listener(&[register], &loopback_v4(), map, reload));
    }
    for (net, port) in &policy.allowed_v4 {
        code.extend(rule(&[register], &words_v4(net), *port, 1));
    }
    for (net, reach) in &others {
        code.extend(refused(&[register], &words_v4(net), *reach, maps.refusals));
    }
    code
}

fn let_through() -> [Insn; 2] {
    [insn(MOV64_K, R0, 0, 0, 1), insn(EXIT, 0, 0, 0, 0)]
}

/// The program for IPv6 destinations (connect6, sendmsg6): an IPv4-mapped one is judged by the
/// IPv4 rules, on its last word; the maps as for [`program_v4`].
pub fn program_v6(policy: &Policy, maps: Maps) -> Vec<Insn> {
    let loads: Vec<Insn> = (WORDS.iter().enumerate())
        .map(|(i, &register)| insn(LDX_MEM_W, register, CTX, USER_IP6 + 4 * i as i16, 0))
        .collect();
    let mut code = vec![insn(MOV64_X, CTX, CTX_IN, 0, 0)];
    code.extend_from_slice(&loads);
    code.push(insn(LDX_MEM_W, PORT, CTX, USER_PORT, 0));
    // IPv4-mapped (::ffff:0:0/96): its own rules, then let through.
    let mapped = words_v6(&super::ranges::V4_MAPPED);
    let mut as_v4 = rules_v4(policy, WORDS[3], maps, &loads);
    as_v4.extend(let_through());
    let mut guard: Vec<Insn> = Vec::new();
    for (&register, &(_, addr)) in WORDS[..3].iter().zip(&mapped) {
        guard.push(insn(JNE32_K, register, 0, 0, addr));
    }
    let guard_length = guard.len();
    for (i, test) in guard.iter_mut().enumerate() {
        test.off = (guard_length - 1 - i + as_v4.len()) as i16;
    }
    code.extend(guard);
    code.extend(as_v4);
    let (never, others): (Vec<_>, Vec<_>) =
        (policy.refused_v6.iter()).partition(|(_, reach)| *reach == Reach::Metadata);
    for (net, reach) in &never {
        code.extend(refused(&WORDS, &words_v6(net), *reach, maps.refusals));
    }
    if let Some(map) = maps.listeners {
        let loopback = words_v6(&Net {
            addr: Ipv6Addr::LOCALHOST,
            prefix: 128,
        });
        code.extend(own_listener(&WORDS, &loopback, map, &loads));
    }
    for (net, port) in &policy.allowed_v6 {
        code.extend(rule(&WORDS, &words_v6(net), *port, 1));
    }
    for (net, reach) in &others {
        code.extend(refused(&WORDS, &words_v6(net), *reach, maps.refusals));
    }
    code.extend(let_through());
    code
}

/// A program that lets every connect and send through: on the cgroup of a worker below a
/// crawl's (a worker is abxd, which reaches its database wherever it is), it overrides the
/// crawl's policy (see `egress::kernel`).
pub fn program_let_through() -> Vec<Insn> {
    let_through().to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `code` on a destination as the kernel would (only the instructions it emits).
    fn run(code: &[Insn], ip6: [u8; 16], ip4: [u8; 4], port: u16) -> i64 {
        let mut context = [0u8; 28];
        context[4..8].copy_from_slice(&ip4);
        context[8..24].copy_from_slice(&ip6);
        context[24..26].copy_from_slice(&port.to_be_bytes());
        let mut regs = [0u64; 11];
        let mut pc = 0usize;
        for _ in 0..10_000 {
            let op = code[pc];
            let (dst, src) = ((op.regs & 0xf) as usize, (op.regs >> 4) as usize);
            let imm32 = op.imm as u32;
            pc += 1;
            match op.code {
                MOV64_X => regs[dst] = regs[src],
                MOV64_K => regs[dst] = op.imm as i64 as u64,
                MOV32_X => regs[dst] = regs[src] & 0xffff_ffff,
                AND32_K => regs[dst] = (regs[dst] as u32 & imm32) as u64,
                LDX_MEM_W => {
                    assert_eq!(src, CTX as usize, "loads read the context");
                    let at = op.off as usize;
                    let word = u32::from_ne_bytes(context[at..at + 4].try_into().unwrap());
                    regs[dst] = word as u64;
                }
                JNE32_K => {
                    if regs[dst] as u32 != imm32 {
                        assert!(op.off >= 0, "forward jumps only");
                        pc += op.off as usize;
                    }
                }
                EXIT => return regs[0] as i64,
                other => panic!("unexpected opcode {other:#x}"),
            }
            assert!(pc < code.len(), "a path runs off the end");
        }
        panic!("no exit");
    }

    fn policy() -> Policy {
        let refused_v4 = super::super::ranges::V4.to_vec();
        let refused_v6 = super::super::ranges::V6.to_vec();
        Policy {
            allowed_v4: vec![
                (
                    Net {
                        addr: Ipv4Addr::new(127, 0, 0, 53),
                        prefix: 32,
                    },
                    Some(53),
                ),
                (
                    Net {
                        addr: Ipv4Addr::new(10, 1, 0, 0),
                        prefix: 16,
                    },
                    None,
                ),
            ],
            allowed_v6: vec![],
            refused_v4,
            refused_v6,
        }
    }

    fn v4(ip: &str, port: u16) -> i64 {
        let ip: Ipv4Addr = ip.parse().unwrap();
        run(
            &program_v4(&policy(), Maps::default()),
            [0; 16],
            ip.octets(),
            port,
        )
    }

    fn v6(ip: &str, port: u16) -> i64 {
        let ip: Ipv6Addr = ip.parse().unwrap();
        run(
            &program_v6(&policy(), Maps::default()),
            ip.octets(),
            [0; 4],
            port,
        )
    }

    #[test]
    fn refused_networks_are_refused_allowed_ones_and_the_rest_let_through() {
        assert_eq!(v4("127.0.0.1", 80), 0);
        assert_eq!(v4("169.254.169.254", 80), 0);
        assert_eq!(v4("192.168.1.10", 443), 0);
        assert_eq!(v4("100.64.3.4", 443), 0);
        assert_eq!(v4("93.184.216.34", 443), 1);
        // The resolver on loopback, on port 53 only; an allowed network on any port.
        assert_eq!(v4("127.0.0.53", 53), 1);
        assert_eq!(v4("127.0.0.53", 80), 0);
        assert_eq!(v4("10.1.200.3", 8080), 1);
        assert_eq!(v4("10.2.0.1", 8080), 0);
    }

    #[test]
    fn the_metadata_address_is_refused_even_inside_an_allowed_network() {
        let mut policy = policy();
        policy.allowed_v4.push((
            Net {
                addr: Ipv4Addr::new(169, 254, 0, 0),
                prefix: 16,
            },
            None,
        ));
        let code = program_v4(&policy, Maps::default());
        let at = |ip: [u8; 4]| run(&code, [0; 16], ip, 80);
        assert_eq!(at([169, 254, 169, 254]), 0);
        assert_eq!(at([169, 254, 1, 1]), 1);
    }

    #[test]
    fn ipv6_destinations_and_ipv4_mapped_ones_are_judged_by_their_rules() {
        assert_eq!(v6("::1", 80), 0);
        assert_eq!(v6("fd00:ec2::254", 80), 0);
        assert_eq!(v6("fe80::1", 80), 0);
        assert_eq!(v6("fd12:3456::1", 80), 0);
        assert_eq!(v6("2606:2800:220:1::1", 443), 1);
        assert_eq!(v6("::ffff:127.0.0.1", 80), 0);
        assert_eq!(v6("::ffff:169.254.169.254", 80), 0);
        assert_eq!(v6("::ffff:127.0.0.53", 53), 1);
        assert_eq!(v6("::ffff:93.184.216.34", 443), 1);
        assert_eq!(v6("::ffff:10.1.0.9", 443), 1);
    }
}
