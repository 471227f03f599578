//! `--filter EXPR` on tracepoint events, in the kernel's event-filter language (what
//! perf passes to the kernel): `prev_pid == 1 && next_comm ~ "kworker*"`, with `==`,
//! `!=`, `<`, `<=`, `>`, `>=`, `&` (bits in common) on numbers, `==`, `!=` and `~`
//! (a glob) on strings, `&&`, `||`, `!` and parentheses. A BPF program on a tracepoint
//! runs before the kernel's own filter, so rtrace evaluates it on each record it reads.

use thiserror::Error;

use super::format::{Field, Layout};
use crate::decode::selection::glob_match;

#[derive(Debug, Error, PartialEq)]
pub enum FilterError {
    #[error("--filter '{expr}': {why}")]
    Bad { expr: String, why: String },
}

#[derive(Debug, Clone, PartialEq)]
pub enum Filter {
    And(Box<Filter>, Box<Filter>),
    Or(Box<Filter>, Box<Filter>),
    Not(Box<Filter>),
    Num { field: usize, op: Op, value: i128 },
    Str { field: usize, op: Op, value: String },
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    BitAnd,
    Glob,
}

const OPS: [(&str, Op); 8] = [
    ("==", Op::Eq),
    ("!=", Op::Ne),
    ("<=", Op::Le),
    (">=", Op::Ge),
    ("<", Op::Lt),
    (">", Op::Gt),
    ("&", Op::BitAnd),
    ("~", Op::Glob),
];

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Quoted(String),
    Op(Op),
    And,
    Or,
    Not,
    Open,
    Close,
}

fn tokens(expr: &str) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut rest = expr.trim_start();
    while !rest.is_empty() {
        let (tok, len) = if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"').ok_or("a string has no closing quote")?;
            (Token::Quoted(r[..end].to_string()), end + 2)
        } else if rest.starts_with("&&") {
            (Token::And, 2)
        } else if rest.starts_with("||") {
            (Token::Or, 2)
        } else if rest.starts_with('(') {
            (Token::Open, 1)
        } else if rest.starts_with(')') {
            (Token::Close, 1)
        } else if let Some((s, op)) = OPS.iter().find(|(s, _)| rest.starts_with(s)) {
            (Token::Op(*op), s.len())
        } else if rest.starts_with('!') {
            (Token::Not, 1)
        } else {
            let end = rest
                .find(|c: char| c.is_whitespace() || "()!=<>&~|\"".contains(c))
                .unwrap_or(rest.len());
            if end == 0 {
                return Err(format!("unexpected '{}'", &rest[..1]));
            }
            (Token::Word(rest[..end].to_string()), end)
        };
        out.push(tok);
        rest = rest[len..].trim_start();
    }
    Ok(out)
}

/// How deep parentheses and `!` may nest, and how many comparisons one filter may
/// hold: the parser and the evaluator recurse once a level, so an expression made to be
/// deep (15,000 parentheses) would otherwise overflow rtrace's stack.
const MAX_DEPTH: usize = 256;
const MAX_PREDICATES: usize = 1024;

struct Parser<'a> {
    toks: Vec<Token>,
    at: usize,
    fields: &'a [Field],
    depth: usize,
    predicates: usize,
}

impl Parser<'_> {
    fn next(&mut self) -> Option<Token> {
        let t = self.toks.get(self.at).cloned();
        self.at += 1;
        t
    }

    fn peek(&self) -> Option<&Token> {
        self.toks.get(self.at)
    }

    fn or(&mut self) -> Result<Filter, String> {
        let mut left = self.and()?;
        while self.peek() == Some(&Token::Or) {
            self.at += 1;
            left = Filter::Or(Box::new(left), Box::new(self.and()?));
        }
        Ok(left)
    }

    fn and(&mut self) -> Result<Filter, String> {
        let mut left = self.unary()?;
        while self.peek() == Some(&Token::And) {
            self.at += 1;
            left = Filter::And(Box::new(left), Box::new(self.unary()?));
        }
        Ok(left)
    }

    fn unary(&mut self) -> Result<Filter, String> {
        // A level is a '(' or a '!'; the comparison inside them is none.
        let nests = matches!(self.peek(), Some(Token::Open | Token::Not));
        if nests {
            self.depth += 1;
            if self.depth > MAX_DEPTH {
                return Err(format!(
                    "it nests parentheses and '!' more than {MAX_DEPTH} deep"
                ));
            }
        }
        let inner = self.unary_inner();
        if nests {
            self.depth -= 1;
        }
        inner
    }

    fn unary_inner(&mut self) -> Result<Filter, String> {
        match self.next() {
            Some(Token::Not) => Ok(Filter::Not(Box::new(self.unary()?))),
            Some(Token::Open) => {
                let inner = self.or()?;
                match self.next() {
                    Some(Token::Close) => Ok(inner),
                    _ => Err("a '(' is not closed".into()),
                }
            }
            Some(Token::Word(name)) => self.predicate(&name),
            _ => Err("expected a field name".into()),
        }
    }

    fn predicate(&mut self, name: &str) -> Result<Filter, String> {
        self.predicates += 1;
        if self.predicates > MAX_PREDICATES {
            return Err(format!("it has more than {MAX_PREDICATES} comparisons"));
        }
        let field = self
            .fields
            .iter()
            .position(|f| f.name == name)
            .ok_or_else(|| format!("the event has no field '{name}'"))?;
        let Some(Token::Op(op)) = self.next() else {
            return Err(format!("expected an operator after '{name}'"));
        };
        let value = match self.next() {
            Some(Token::Word(w) | Token::Quoted(w)) => w,
            _ => return Err(format!("expected a value after '{name}'")),
        };
        let is_text = self.fields[field].layout != Layout::Scalar;
        if is_text {
            if !matches!(op, Op::Eq | Op::Ne | Op::Glob) {
                return Err(format!("'{name}' is a string: use ==, != or ~"));
            }
            return Ok(Filter::Str { field, op, value });
        }
        if op == Op::Glob {
            return Err(format!("'{name}' is a number: ~ is for strings"));
        }
        Ok(Filter::Num {
            field,
            op,
            value: parse_number(&value).ok_or_else(|| format!("'{value}' is not a number"))?,
        })
    }
}

fn parse_number(s: &str) -> Option<i128> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, s),
    };
    let v = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => i128::from_str_radix(hex, 16).ok()?,
        None => digits.parse::<i128>().ok()?,
    };
    Some(if neg { -v } else { v })
}

/// The expression as an error quotes it: its start, so that the message stays one
/// readable line however long the expression is.
fn shortened(expr: &str) -> String {
    const SHOWN: usize = 80;
    match expr.char_indices().nth(SHOWN) {
        Some((end, _)) => format!("{}…", &expr[..end]),
        None => expr.to_string(),
    }
}

/// Parses `expr` against an event's `fields`.
pub fn parse(expr: &str, fields: &[Field]) -> Result<Filter, FilterError> {
    let bad = |why: String| FilterError::Bad {
        expr: shortened(expr),
        why,
    };
    let toks = tokens(expr).map_err(bad)?;
    let mut p = Parser {
        toks,
        at: 0,
        fields,
        depth: 0,
        predicates: 0,
    };
    let f = p.or().map_err(bad)?;
    if p.at < p.toks.len() {
        return Err(bad("unexpected text after the expression".into()));
    }
    Ok(f)
}

impl Filter {
    /// Whether the record `data` of an event with `fields` passes. A field past what
    /// was read does not match.
    pub fn matches(&self, fields: &[Field], data: &[u8]) -> bool {
        match self {
            Self::And(a, b) => a.matches(fields, data) && b.matches(fields, data),
            Self::Or(a, b) => a.matches(fields, data) || b.matches(fields, data),
            Self::Not(a) => !a.matches(fields, data),
            Self::Num { field, op, value } => {
                let Some(v) = fields[*field].int(data) else {
                    return false;
                };
                match op {
                    Op::Eq => v == *value,
                    Op::Ne => v != *value,
                    Op::Lt => v < *value,
                    Op::Le => v <= *value,
                    Op::Gt => v > *value,
                    Op::Ge => v >= *value,
                    Op::BitAnd => v & *value != 0,
                    Op::Glob => false,
                }
            }
            Self::Str { field, op, value } => {
                let Some(text) = fields[*field].text(data) else {
                    return false;
                };
                let text = String::from_utf8_lossy(text);
                match op {
                    Op::Eq => text == value.as_str(),
                    Op::Ne => text != value.as_str(),
                    _ => glob_match(value, &text),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::format;

    const SWITCH: &str = "\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;
\tfield:int prev_prio;\toffset:28;\tsize:4;\tsigned:1;
\tfield:long prev_state;\toffset:32;\tsize:8;\tsigned:1;
";

    fn record(comm: &[u8], pid: i32, state: i64) -> Vec<u8> {
        let mut r = vec![0u8; 40];
        r[8..8 + comm.len()].copy_from_slice(comm);
        r[24..28].copy_from_slice(&pid.to_ne_bytes());
        r[32..40].copy_from_slice(&state.to_ne_bytes());
        r
    }

    #[test]
    fn numbers_strings_and_logic() {
        let (_, fields) = format::parse(SWITCH);
        let f = parse(
            "(prev_pid == 7 || prev_pid > 100) && prev_comm ~ \"kwork*\" && !(prev_state & 0x2)",
            &fields,
        )
        .unwrap();
        assert!(f.matches(&fields, &record(b"kworker/0", 7, 1)));
        assert!(f.matches(&fields, &record(b"kworker/0", 101, 0)));
        assert!(!f.matches(&fields, &record(b"kworker/0", 8, 0)));
        assert!(!f.matches(&fields, &record(b"sh", 7, 0)));
        assert!(!f.matches(&fields, &record(b"kworker/0", 7, 2)));
        let neg = parse("prev_pid != -1 && prev_comm == sh", &fields).unwrap();
        assert!(neg.matches(&fields, &record(b"sh", 3, 0)));
    }

    #[test]
    fn bad_filters_say_why() {
        let (_, fields) = format::parse(SWITCH);
        let why = |e: &str| parse(e, &fields).unwrap_err().to_string();
        assert_eq!(
            why("next_pid == 1"),
            "--filter 'next_pid == 1': the event has no field 'next_pid'"
        );
        assert_eq!(
            why("prev_pid ~ 1"),
            "--filter 'prev_pid ~ 1': 'prev_pid' is a number: ~ is for strings"
        );
        assert_eq!(
            why("prev_pid == x1"),
            "--filter 'prev_pid == x1': 'x1' is not a number"
        );
        assert_eq!(
            why("(prev_pid == 1"),
            "--filter '(prev_pid == 1': a '(' is not closed"
        );
    }

    #[test]
    fn deep_or_long_filters_are_refused_in_one_line() {
        let (_, fields) = format::parse(SWITCH);
        let why = |e: &str| parse(e, &fields).unwrap_err().to_string();
        // 15,000 parentheses, 30,000 '!': refused, not a stack overflow.
        let parens = format!("{}prev_pid == 1{}", "(".repeat(15_000), ")".repeat(15_000));
        let e = why(&parens);
        assert!(
            e.ends_with("it nests parentheses and '!' more than 256 deep"),
            "{e}"
        );
        assert!(e.len() < 200, "{e}");
        assert!(why(&format!("{}prev_pid == 1", "!".repeat(30_000))).contains("256 deep"));
        let many = vec!["prev_pid == 1"; 5000].join(" && ");
        assert!(why(&many).ends_with("it has more than 1024 comparisons"));
        // At the limits, a filter is taken; one more level is refused.
        let deep = |n| format!("{}prev_pid == 1{}", "(".repeat(n), ")".repeat(n));
        assert!(parse(&deep(256), &fields).is_ok());
        assert!(why(&deep(257)).contains("more than 256 deep"));
        let long = vec!["prev_pid == 1"; 1024].join(" || ");
        assert!(
            parse(&long, &fields)
                .unwrap()
                .matches(&fields, &record(b"sh", 1, 0))
        );
    }
}
