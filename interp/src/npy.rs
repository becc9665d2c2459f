//! Reading and writing tensors as NumPy `.npy` files, through `npyz`.
//!
//! Supported dtypes: `<f4`, `<f8`, `<i4`, `<i8` and `|b1`, C order.

use crate::tensor::{Buffer, Tensor};
use npyz::{DType, NpyFile, WriterBuilder};
use std::{
    fs::File,
    io::{self, BufReader, Read, Seek, Write},
    path::Path,
};

/// Reads a `.npy` file: a regular file in place, anything else (a pipe,
/// `/dev/stdin`) read whole into memory first, since the reader seeks.
pub fn read(path: &Path) -> Result<Tensor, String> {
    let mut file = File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
    let regular = file.metadata().is_ok_and(|m| m.is_file());
    let tensor = if regular {
        read_from(BufReader::new(file))
    } else {
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
        read_from(io::Cursor::new(bytes))
    };
    tensor.map_err(|e| format!("'{}' {e}", path.display()))
}

/// Reads a tensor in `.npy` format from `reader`; the error completes a
/// sentence whose subject is the file ("is not a .npy file: ...").
pub fn read_from(mut reader: impl Read + Seek) -> Result<Tensor, String> {
    let data_start = check_shape(&mut reader)?;
    let total = reader
        .seek(io::SeekFrom::End(0))
        .map_err(|e| format!("cannot be read: {e}"))?;
    reader.rewind().map_err(|e| format!("cannot be read: {e}"))?;
    let npy = NpyFile::new(reader).map_err(|e| format!("is not a .npy file: {e}"))?;
    if npy.order() != npyz::Order::C {
        return Err("is in Fortran order; save it in C order".to_owned());
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    crate::tensor::checked_len(&shape).map_err(|e| format!("is too large: {e}"))?;
    let descr = match npy.dtype() {
        DType::Plain(ty) => ty.to_string(),
        DType::Record(fields) => {
            let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            return Err(format!(
                "has a record dtype (fields {}); expected float32, float64, int32, int64 or bool",
                names.join(", ")
            ));
        }
        DType::Array(..) => {
            return Err("has a sub-array dtype; expected float32, float64, int32, int64 or bool".to_owned());
        }
    };
    let bad = |e: io::Error| format!("is truncated or corrupt: {e}");
    let buffer = match descr.as_str() {
        "<f4" => Buffer::F32(npy.into_vec().map_err(bad)?.into()),
        "<f8" => Buffer::F64(npy.into_vec().map_err(bad)?.into()),
        "<i4" => Buffer::I32(npy.into_vec().map_err(bad)?.into()),
        "<i8" => Buffer::I64(npy.into_vec().map_err(bad)?.into()),
        "|b1" => Buffer::I1(npy.into_vec().map_err(bad)?.into()),
        other => {
            return Err(format!(
                "has dtype '{other}'; expected float32, float64, int32, int64 or bool"
            ));
        }
    };
    let tensor =
        Tensor::new(shape, buffer).ok_or_else(|| "holds fewer elements than its shape says".to_owned())?;
    // Nothing may follow the data: a file with more bytes than its header
    // promises was written by something else, or cut and joined.
    let data = (tensor.len() * tensor.element_type().byte_width()) as u64;
    if let Some(start) = data_start
        && start + data < total
    {
        return Err(format!(
            "has {} bytes after its data ({} elements of {}); the header does not describe the file",
            total - start - data,
            tensor.len(),
            tensor.element_type()
        ));
    }
    Ok(tensor)
}

/// The deepest bracket nesting of a `.npy` header jitc parses: a record
/// dtype with nested fields and sub-array shapes stays well within it.
const MAX_HEADER_NESTING: usize = 8;

/// Checks, before `npyz` computes with it, that the shape in the header
/// of the `.npy` file `reader` is at the start of has an element count that
/// fits in 64 bits (`npyz` multiplies the dimensions unchecked). Anything
/// else wrong with the header is left for `npyz` to report. Returns where
/// the data starts, when the header could be read.
fn check_shape(reader: &mut impl Read) -> Result<Option<u64>, String> {
    let mut prefix = [0u8; 12];
    let mut filled = 0;
    while filled < prefix.len() {
        match reader.read(&mut prefix[filled..]) {
            Ok(0) => return Ok(None),
            Ok(n) => filled += n,
            Err(e) => return Err(format!("cannot be read: {e}")),
        }
    }
    if &prefix[..6] != b"\x93NUMPY" {
        return Ok(None);
    }
    let (length, start) = match prefix[6] {
        1 => (u16::from_le_bytes([prefix[8], prefix[9]]) as usize, 10),
        2 | 3 => (
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize,
            12,
        ),
        // A version npyz does not read: it says so.
        _ => return Ok(None),
    };
    let mut header = prefix[start..].to_vec();
    reader
        .take(length.saturating_sub(header.len()) as u64)
        .read_to_end(&mut header)
        .map_err(|e| format!("cannot be read: {e}"))?;
    // A header is a flat dict whose values nest a level or two (a shape
    // tuple, a record dtype's list of tuples). The Python-literal parser
    // takes exponential time on deep nesting, so a header nested deeper
    // than any NumPy writes is refused before it is parsed.
    let mut depth = 0usize;
    for &byte in &header {
        match byte {
            b'{' | b'(' | b'[' => depth += 1,
            b'}' | b')' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > MAX_HEADER_NESTING {
            return Err(format!(
                "has a malformed header: it nests brackets more than {MAX_HEADER_NESTING} deep"
            ));
        }
    }
    // The same parser npyz uses (`py_literal`), so every header npyz would
    // accept is understood here too; but first a linear scan of its shape
    // (`literal_shape`), since that parser backtracks for minutes on some
    // malformed headers of a few kilobytes (found by the `inputs` fuzz
    // target), and npyz parses the header with it again.
    let header = String::from_utf8_lossy(&header);
    let malformed = || {
        let shown: String = header.trim_end().chars().take(60).collect();
        format!("has a malformed header: `{shown}` is not the Python dict a .npy header is")
    };
    if !literal_shape(header.trim_end().as_bytes()) {
        return Err(malformed());
    }
    let Ok(py_literal::Value::Dict(entries)) = header.trim_end().parse::<py_literal::Value>() else {
        return Err(malformed());
    };
    // Every `'shape'` entry: npyz keeps the last of duplicate keys.
    let shapes = entries.iter().filter_map(|(key, value)| match (key, value) {
        (py_literal::Value::String(key), py_literal::Value::Tuple(dims) | py_literal::Value::List(dims))
            if key == "shape" =>
        {
            Some(dims)
        }
        _ => None,
    });
    for dims in shapes {
        // A size that is not a non-negative 64-bit integer is npyz's to
        // report.
        let Some(sizes) = dims
            .iter()
            .map(|d| match d {
                py_literal::Value::Integer(n) => n.to_string().parse::<u64>().ok(),
                _ => None,
            })
            .collect::<Option<Vec<u64>>>()
        else {
            continue;
        };
        // npyz multiplies the sizes unchecked, those around a zero too
        // (its strides): the rule of `extent_bytes`.
        if jitc_dialect::kinds::extent_bytes(sizes.iter().copied(), 8).is_none() {
            let sizes: Vec<String> = sizes.iter().map(ToString::to_string).collect();
            return Err(format!(
                "has shape ({}), larger than a 64-bit index can address",
                sizes.join(", ")
            ));
        }
    }
    Ok(Some((start + length) as u64))
}

/// Whether `text` has the shape of a Python dict literal a `.npy` header
/// holds, in one pass: brackets that match (at most
/// [`MAX_HEADER_NESTING`] deep), quoted strings that end (backslash
/// escapes), the names `True`, `False` and `None`, runs of number
/// characters, and `,` and `:` between values. What it accepts may still
/// be refused by the literal parser (a number that is not one); what it
/// refuses that parser would refuse too, or NumPy never writes (bytes
/// past ASCII, floats in exponent form, sets).
fn literal_shape(text: &[u8]) -> bool {
    fn skip_space(text: &[u8], at: &mut usize) {
        while *at < text.len() && text[*at].is_ascii_whitespace() {
            *at += 1;
        }
    }
    /// A value at `at`; `false` when there is none.
    fn value(text: &[u8], at: &mut usize, depth: usize) -> bool {
        skip_space(text, at);
        let Some(&first) = text.get(*at) else {
            return false;
        };
        match first {
            b'{' | b'(' | b'[' => {
                if depth >= MAX_HEADER_NESTING {
                    return false;
                }
                let close = match first {
                    b'{' => b'}',
                    b'(' => b')',
                    _ => b']',
                };
                *at += 1;
                loop {
                    skip_space(text, at);
                    if text.get(*at) == Some(&close) {
                        *at += 1;
                        return true;
                    }
                    if !value(text, at, depth + 1) {
                        return false;
                    }
                    skip_space(text, at);
                    if first == b'{' {
                        if text.get(*at) != Some(&b':') {
                            return false;
                        }
                        *at += 1;
                        if !value(text, at, depth + 1) {
                            return false;
                        }
                        skip_space(text, at);
                    }
                    match text.get(*at) {
                        Some(b',') => *at += 1,
                        Some(&c) if c == close => {}
                        _ => return false,
                    }
                }
            }
            b'\'' | b'"' => {
                *at += 1;
                while let Some(&c) = text.get(*at) {
                    *at += 1;
                    if c == b'\\' {
                        *at += 1;
                    } else if c == first {
                        return true;
                    } else if c == b'\n' || !c.is_ascii() {
                        return false;
                    }
                }
                false
            }
            b'0'..=b'9' | b'+' | b'-' | b'.' => {
                let start = *at;
                while text
                    .get(*at)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || matches!(c, b'+' | b'-' | b'.' | b'_'))
                {
                    *at += 1;
                }
                *at > start
            }
            _ => {
                for name in [&b"True"[..], b"False", b"None"] {
                    if text[*at..].starts_with(name) {
                        *at += name.len();
                        return true;
                    }
                }
                false
            }
        }
    }
    let mut at = 0;
    if !value(text, &mut at, 0) {
        return false;
    }
    skip_space(text, &mut at);
    at == text.len() && text.first() == Some(&b'{')
}

/// Writes `tensor` in `.npy` format to `out`.
pub fn write_to(out: &mut impl Write, tensor: &Tensor) -> io::Result<()> {
    let shape: Vec<u64> = tensor.shape().iter().map(|&d| d as u64).collect();
    macro_rules! write_all {
        ($values:expr) => {{
            let mut writer = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut *out)
                .begin_nd()?;
            writer.extend($values.iter().copied())?;
            writer.finish()
        }};
    }
    match tensor.buffer() {
        Buffer::F32(v) => write_all!(v),
        Buffer::F64(v) => write_all!(v),
        Buffer::I32(v) => write_all!(v),
        Buffer::I64(v) => write_all!(v),
        Buffer::I1(v) => write_all!(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_dtype() {
        let dir = std::env::temp_dir().join(format!("jitc-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for literal in [
            "2x3xf32=1 2 3 4 5 6.5",
            "2xf64=1e300 -2",
            "3xi32=1 -2 3",
            "1x2xi64=9000000000 -1",
            "2x2xi1=1 0 0 1",
            "f32=3",
        ] {
            let tensor = Tensor::parse_literal(literal).unwrap();
            let path = dir.join("t.npy");
            let mut bytes = Vec::new();
            write_to(&mut bytes, &tensor).unwrap();
            std::fs::write(&path, bytes).unwrap();
            assert_eq!(read(&path).unwrap(), tensor, "{literal}");
        }
        std::fs::write(dir.join("bad.npy"), b"not numpy").unwrap();
        assert!(
            read(&dir.join("bad.npy"))
                .unwrap_err()
                .contains("is not a .npy file")
        );
        assert!(
            read(&dir.join("missing.npy"))
                .unwrap_err()
                .contains("cannot open")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A `.npy` file whose header says `shape` and holds no data.
    fn header_only(shape: &str) -> Vec<u8> {
        let mut header = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': {shape}, }}");
        while (10 + header.len() + 1) % 64 != 0 {
            header.push(' ');
        }
        header.push('\n');
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend((header.len() as u16).to_le_bytes());
        bytes.extend(header.as_bytes());
        bytes
    }

    #[test]
    fn a_shape_whose_count_overflows_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.npy");
        std::fs::write(&path, header_only("(4611686018427387904, 4611686018427387904)")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.contains("larger than a 64-bit index can address"),
            "{error}"
        );
        // Found by the `inputs` fuzz target: npyz's Python-literal parser
        // reads `4611686018+427387904` as one integer, so the check reads
        // headers with the same parser.
        std::fs::write(&path, header_only("(4611686018+427387904, 4611686018427387904)")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.contains("larger than a 64-bit index can address"),
            "{error}"
        );
        // Found by the `inputs` fuzz target: the header parser takes
        // exponential time on nested brackets.
        let mut nested = header_only("()");
        let braces = nested.iter().position(|&b| b == b'{').unwrap();
        nested.splice(braces..braces, std::iter::repeat_n(b'{', 80));
        std::fs::write(&path, nested).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("malformed header"), "{error}");
        // Found by the `inputs` fuzz target: no elements, but npyz's
        // strides multiply the dimensions after the zero.
        std::fs::write(&path, header_only("(0, 46387904, 11686018427387904)")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.contains("larger than a 64-bit index can address"),
            "{error}"
        );
        // Found in review: npyz keeps the last of two `'shape'` keys.
        std::fs::write(
            &path,
            header_only("(1,), 'shape': (4611686018427387904, 4611686018427387904)"),
        )
        .unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.contains("larger than a 64-bit index can address"),
            "{error}"
        );
        // Found by the `inputs` fuzz target: a header of 4 KB of which the
        // literal parser took minutes to say it is not a dict.
        std::fs::write(&path, include_bytes!("../tests/data/slow-header.npy")).unwrap();
        let started = std::time::Instant::now();
        let error = read(&path).unwrap_err();
        assert!(error.contains("malformed header"), "{error}");
        assert!(started.elapsed().as_secs() < 5, "took {:?}", started.elapsed());
        // Within 64 bits but past the element limit: the limit's message.
        std::fs::write(&path, header_only("(4294967296, 4)")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("elements"), "{error}");
    }

    #[test]
    fn files_that_are_not_what_their_header_says_are_errors_in_one_sentence() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.npy");
        // Trailing bytes after the data.
        let mut bytes = Vec::new();
        write_to(&mut bytes, &Tensor::parse_literal("2xf32=1 2").unwrap()).unwrap();
        bytes.extend(b"xyz");
        std::fs::write(&path, &bytes).unwrap();
        let error = read(&path).unwrap_err();
        assert!(
            error.ends_with(
                "has 3 bytes after its data (2 elements of f32); the header does not describe the file"
            ),
            "{error}"
        );
        // A header that is not a dict literal.
        let mut broken = header_only("(2,)");
        let close = broken.iter().rposition(|&b| b == b'}').unwrap();
        broken[close] = b' ';
        std::fs::write(&path, &broken).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("has a malformed header: `{'descr'"), "{error}");
        assert!(!error.contains("-->"), "no parser dump: {error}");
        // A record dtype: named by its fields, not Rust's Debug form.
        let plain = header_only("(2,)");
        let header = String::from_utf8_lossy(&plain[10..]).replace("'<f4'", "[('a', '<f4'), ('b', '<i4')]");
        let mut record = plain[..10].to_vec();
        record.extend(header.as_bytes());
        let length = (record.len() - 10) as u16;
        record[8..10].copy_from_slice(&length.to_le_bytes());
        record.extend([0u8; 16]);
        std::fs::write(&path, &record).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("has a record dtype (fields a, b)"), "{error}");
        assert!(!error.contains("Field {"), "{error}");
    }
}
