#!/usr/bin/env node
// A calc implementation in JavaScript, with its harness for docs/protocol.md.
//
//   cer run examples/calc/evals.toml --impl-cmd 'node examples/harnesses/calc_harness.mjs'
//   cer run examples/calc/evals.toml \
//       --impl-cmd-per-case 'node examples/harnesses/calc_harness.mjs --per-case'
//
// Self-contained (Node.js 18 or later, no packages). The calculator follows
// examples/calc/commonsformat.md: integers are BigInts and stay exact, floats are
// Numbers, and the two never mix up on the way back because every value carries its
// type tag. Errors carry the spec's error names (ValueError, ZeroDivisionError,
// TypeError); a bug in this file is reported as a harness_error, never as a rejection.

import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const PROTOCOL = 1;

// ------------------------------------------------------------------- the calculator

class CalcError extends Error {
  constructor(type, message) {
    super(message);
    this.type = type;
  }
}

const valueError = (message) => new CalcError("ValueError", message);
const DIGITS = "0123456789";
const WHITESPACE = " \t";
const OPERATORS = ["**", "//", "+", "-", "*", "/", "%", "(", ")"];
const BINARY = { "+": [1, false], "-": [1, false], "*": [2, false], "/": [2, false],
  "//": [2, false], "%": [2, false], "**": [4, true] };
const UNARY_MINUS = 3;
const MAX_DEPTH = 256;
const MAX_INT_DIGITS = 10000;
const INT_LIMIT = 10n ** BigInt(MAX_INT_DIGITS);

const isInt = (x) => typeof x === "bigint";
const abs = (n) => (n < 0n ? -n : n);

// How Python's repr() quotes a string: error messages quote the offending token.
function pyRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = quote;
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === quote || ch === "\\") out += "\\" + ch;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch !== " " && /[\p{C}\p{Z}]/u.test(ch)) {
      const hex = code.toString(16);
      if (code < 0x100) out += "\\x" + hex.padStart(2, "0");
      else if (code < 0x10000) out += "\\u" + hex.padStart(4, "0");
      else out += "\\U" + hex.padStart(8, "0");
    } else out += ch;
  }
  return out + quote;
}

function tokenize(chars) {
  const tokens = [];
  let i = 0;
  const n = chars.length;
  while (i < n) {
    const ch = chars[i];
    if (WHITESPACE.includes(ch)) { i += 1; continue; }
    if (DIGITS.includes(ch)) {
      const start = i;
      while (i < n && DIGITS.includes(chars[i])) i += 1;
      if (i + 1 < n && chars[i] === "." && DIGITS.includes(chars[i + 1])) {
        i += 1;
        while (i < n && DIGITS.includes(chars[i])) i += 1;
      }
      tokens.push({ kind: "number", text: chars.slice(start, i).join(""), pos: start });
      continue;
    }
    const op = OPERATORS.find((o) => chars.slice(i, i + o.length).join("") === o);
    if (op === undefined) throw valueError(`unexpected ${pyRepr(ch)} at position ${i}`);
    tokens.push({ kind: "op", text: op, pos: i });
    i += op.length;
  }
  tokens.push({ kind: "end", text: "", pos: n });
  return tokens;
}

// A BigInt as a float, refusing (like Python) one too large to convert.
function toFloat(x) {
  if (!isInt(x)) return x;
  const value = Number(x);
  if (!Number.isFinite(value)) throw valueError("result too large");
  return value;
}

function log10Int(n) {
  const digits = abs(n).toString();
  return digits.length - 1 + Math.log10(Number(digits.slice(0, 15)) / 10 ** (Math.min(15, digits.length) - 1));
}

function checked(value) {
  if (isInt(value)) {
    if (abs(value) >= INT_LIMIT) throw valueError(`result too large (more than ${MAX_INT_DIGITS} digits)`);
  } else if (value === Infinity || value === -Infinity) {
    throw valueError("result too large");
  }
  return value;
}

function isZero(x) { return isInt(x) ? x === 0n : x === 0; }

function zeroDivision() { return new CalcError("ZeroDivisionError", "division by zero"); }

// True division of two BigInts, correctly scaled even past the float range's inputs.
function divideInts(a, b) {
  if (abs(a) < 2n ** 53n && abs(b) < 2n ** 53n) return Number(a) / Number(b);
  const negative = (a < 0n) !== (b < 0n);
  const [x, y] = [abs(a), abs(b)];
  const shift = 40 - (x.toString().length - y.toString().length);
  const q = shift >= 0 ? (x * 10n ** BigInt(shift)) / y : x / (y * 10n ** BigInt(-shift));
  const value = Number(`${q}e${-shift}`);
  return negative ? -value : value;
}

// Python's float floor division and modulo (CPython's float_floor_div / float_rem).
function floatMod(x, y) {
  let mod = x % y;
  if (mod) {
    if ((y < 0) !== (mod < 0)) mod += y;
  } else {
    mod = Math.sign(y) < 0 || Object.is(y, -0) ? -0 : 0;
  }
  return mod;
}

function floatFloorDiv(x, y) {
  let mod = x % y;
  let div = (x - mod) / y;
  if (mod && (y < 0) !== (mod < 0)) div -= 1;
  if (div) {
    let floor = Math.floor(div);
    if (div - floor > 0.5) floor += 1;
    return floor;
  }
  return (x / y) < 0 || Object.is(x / y, -0) ? -0 : 0;
}

function power(a, b) {
  if (isZero(a) && b < 0) throw zeroDivision();
  if (a < 0 && !isInt(b) && !Number.isInteger(b)) throw valueError("result is not a real number");
  if (isInt(a) && isInt(b)) {
    if (b > 0n && abs(a) > 1n && Number(b) * log10Int(a) > MAX_INT_DIGITS + 1) {
      throw valueError(`result too large (more than ${MAX_INT_DIGITS} digits)`);
    }
    if (b >= 0n) {
      if (abs(a) <= 1n) return a === 0n ? (b === 0n ? 1n : 0n) : (a === 1n || b % 2n === 0n ? 1n : -1n);
      return a ** b;
    }
    return Math.pow(toFloat(a), toFloat(b));
  }
  return Math.pow(toFloat(a), toFloat(b));
}

function apply(op, a, b) {
  const ints = isInt(a) && isInt(b);
  switch (op) {
    case "+": return checked(ints ? a + b : toFloat(a) + toFloat(b));
    case "-": return checked(ints ? a - b : toFloat(a) - toFloat(b));
    case "*": return checked(ints ? a * b : toFloat(a) * toFloat(b));
    case "/":
      if (isZero(b)) throw zeroDivision();
      return checked(ints ? divideInts(a, b) : toFloat(a) / toFloat(b));
    case "//":
      if (isZero(b)) throw zeroDivision();
      if (ints) {
        let q = a / b;
        if (a % b !== 0n && (a < 0n) !== (b < 0n)) q -= 1n;
        return checked(q);
      }
      return checked(floatFloorDiv(toFloat(a), toFloat(b)));
    case "%":
      if (isZero(b)) throw zeroDivision();
      if (ints) {
        let r = a % b;
        if (r !== 0n && (r < 0n) !== (b < 0n)) r += b;
        return checked(r);
      }
      return checked(floatMod(toFloat(a), toFloat(b)));
    case "**": return checked(power(a, b));
    default: throw valueError(`unexpected ${pyRepr(op)}`);
  }
}

class Evaluator {
  constructor(source) {
    this.chars = Array.from(source); // positions count code points, as in the spec
    this.tokens = [];
    this.index = 0;
    this.depth = 0;
  }

  evaluate() {
    if (this.chars.every((ch) => WHITESPACE.includes(ch))) throw valueError("empty expression");
    this.tokens = tokenize(this.chars);
    let value;
    try {
      value = this.expression(0);
    } catch (error) {
      if (error instanceof RangeError) throw valueError("expression too deeply nested");
      throw error;
    }
    const token = this.peek();
    if (token.kind !== "end") throw this.unexpected(token);
    return value;
  }

  peek() { return this.tokens[this.index]; }

  advance() {
    const token = this.tokens[this.index];
    if (token.kind !== "end") this.index += 1;
    return token;
  }

  unexpected(token) {
    const what = token.kind === "end" ? "end of input" : pyRepr(token.text);
    const where = token.kind === "end" ? "" : ` at position ${token.pos}`;
    return valueError(`unexpected ${what}${where}`);
  }

  enter() {
    this.depth += 1;
    if (this.depth > MAX_DEPTH) {
      throw valueError(`expression too deeply nested (more than ${MAX_DEPTH} levels)`);
    }
  }

  expression(minPrecedence) {
    let value = this.operand();
    for (;;) {
      const token = this.peek();
      if (token.kind !== "op" || !(token.text in BINARY)) return value;
      const [precedence, right] = BINARY[token.text];
      if (precedence < minPrecedence) return value;
      this.advance();
      let rhs;
      if (right) {
        this.enter();
        rhs = this.expression(precedence);
        this.depth -= 1;
      } else {
        rhs = this.expression(precedence + 1);
      }
      value = apply(token.text, value, rhs);
    }
  }

  operand() {
    const token = this.advance();
    if (token.kind === "number") return this.number(token.text);
    if (token.kind === "op" && token.text === "-") {
      this.enter();
      const value = this.expression(UNARY_MINUS);
      this.depth -= 1;
      return checked(-value);
    }
    if (token.kind === "op" && token.text === "(") {
      this.enter();
      const value = this.expression(0);
      this.depth -= 1;
      const closing = this.advance();
      if (closing.text !== ")" || closing.kind !== "op") throw this.unexpected(closing);
      return value;
    }
    throw this.unexpected(token);
  }

  number(text) {
    if (text.includes(".")) return checked(Number(text));
    if (text.replace(/^0+/, "").length > MAX_INT_DIGITS) throw valueError("result too large");
    return checked(BigInt(text));
  }
}

function pyTypeName(value) {
  if (value === null) return "NoneType";
  if (isInt(value)) return "int";
  if (typeof value === "number") return "float";
  if (typeof value === "boolean") return "bool";
  if (typeof value === "string") return "str";
  if (Array.isArray(value)) return "list";
  return "dict";
}

// evaluate(expr=None, *, file=None): exactly one of expr and file.
function evaluate(input) {
  for (const key of Object.keys(input)) {
    if (key !== "expr" && key !== "file") {
      throw new CalcError("TypeError", `evaluate() got an unexpected keyword argument '${key}'`);
    }
  }
  const { expr = null, file = null } = input;
  if ((expr === null) === (file === null)) {
    throw new CalcError("TypeError", "evaluate() takes exactly one of expr or file");
  }
  let source = expr;
  if (expr !== null) {
    if (typeof expr !== "string") {
      throw new CalcError("TypeError", `expr must be a str, not ${pyTypeName(expr)}`);
    }
  } else {
    if (typeof file !== "string") {
      throw new CalcError("TypeError", `file must be a path, not ${pyTypeName(file)}`);
    }
    try {
      source = readFileSync(file, "utf8");
    } catch (error) {
      if (error.code === "ENOENT") {
        throw new CalcError("FileNotFoundError", `No such file or directory: '${file}'`);
      }
      throw new CalcError("OSError", String(error.message));
    }
    if (source.endsWith("\r\n")) source = source.slice(0, -2);
    else if (source.endsWith("\n")) source = source.slice(0, -1);
  }
  return new Evaluator(source).evaluate();
}

// --------------------------------------------------------------------- typed values

function decode(typed) {
  const { type, value } = typed;
  switch (type) {
    case "string": return value;
    case "integer": return BigInt(value);
    case "float": return parseFloatText(String(value));
    case "bool": return value;
    case "null": return null;
    case "array": return value.map(decode);
    case "table": {
      const table = {};
      for (const [key, item] of Object.entries(value)) table[key] = decode(item);
      return table;
    }
    default: return { type, value }; // dates, times and bytes are not used by calc
  }
}

function parseFloatText(text) {
  const names = { nan: NaN, inf: Infinity, "+inf": Infinity, "-inf": -Infinity };
  return text in names ? names[text] : Number(text);
}

function encode(value) {
  if (value === null) return { type: "null" };
  if (isInt(value)) return { type: "integer", value: value.toString() };
  if (typeof value === "number") {
    if (Number.isNaN(value)) return { type: "float", value: "nan" };
    if (!Number.isFinite(value)) return { type: "float", value: value > 0 ? "inf" : "-inf" };
    return { type: "float", value: Object.is(value, -0) ? "-0.0" : String(value) };
  }
  if (typeof value === "boolean") return { type: "bool", value };
  if (typeof value === "string") return { type: "string", value };
  if (Array.isArray(value)) return { type: "array", value: value.map(encode) };
  const table = {};
  for (const [key, item] of Object.entries(value)) table[key] = encode(item);
  return { type: "table", value: table };
}

// ------------------------------------------------------------------------ protocol

function runCase(testCase) {
  let input;
  try {
    input = decode(testCase.input);
  } catch (error) {
    return { harness_error: { message: `cannot decode the input: ${error}` } };
  }
  try {
    return { observation: encode(evaluate(input)) };
  } catch (error) {
    if (error instanceof CalcError) {
      return { error: { type: error.type, message: error.message } };
    }
    return { harness_error: { message: `the calculator failed: ${error && error.stack}` } };
  }
}

function send(message) {
  process.stdout.write(JSON.stringify(message) + "\n");
}

if (process.argv.includes("--per-case")) {
  const request = JSON.parse(readFileSync(0, "utf8"));
  // No start handshake here: each request offers the protocol version, and a version
  // this harness does not speak is refused, never guessed at.
  const offered = request.protocol === undefined ? PROTOCOL : request.protocol;
  if (offered !== PROTOCOL) {
    send({ op: "refused", protocol: PROTOCOL, reason: `offered ${JSON.stringify(offered)}` });
    process.exitCode = 1;
  } else {
    send(runCase(request.case));
  }
} else {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
  lines.on("line", (line) => {
    const request = JSON.parse(line);
    if (request.op === "start") {
      send({
        op: "started",
        protocol: PROTOCOL,
        implementation: { name: "calc-node", version: "0.1.0", language: "javascript" },
      });
    } else if (request.op === "run") {
      send({ op: "result", seq: request.seq, ...runCase(request.case) });
    } else if (request.op === "stop") {
      lines.close();
    }
  });
}
