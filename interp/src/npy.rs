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

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<Tensor, String> {
    let mut file = File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
    check_shape(&mut file).map_err(|e| format!("'{}' {e}", path.display()))?;
    file.rewind()
        .map_err(|e| format!("cannot read '{}': {e}", path.display()))?;
    let npy = NpyFile::new(BufReader::new(file))
        .map_err(|e| format!("'{}' is not a .npy file: {e}", path.display()))?;
    if npy.order() != npyz::Order::C {
        return Err(format!(
            "'{}' is in Fortran order; save it in C order",
            path.display()
        ));
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    crate::tensor::checked_len(&shape).map_err(|e| format!("'{}': {e}", path.display()))?;
    let descr = match npy.dtype() {
        DType::Plain(ty) => ty.to_string(),
        other => {
            return Err(format!(
                "'{}' has dtype {other:?}; expected a plain numeric dtype",
                path.display()
            ));
        }
    };
    let bad = |e: std::io::Error| format!("'{}' is truncated or corrupt: {e}", path.display());
    let buffer = match descr.as_str() {
        "<f4" => Buffer::F32(npy.into_vec().map_err(bad)?.into()),
        "<f8" => Buffer::F64(npy.into_vec().map_err(bad)?.into()),
        "<i4" => Buffer::I32(npy.into_vec().map_err(bad)?.into()),
        "<i8" => Buffer::I64(npy.into_vec().map_err(bad)?.into()),
        "|b1" => Buffer::I1(npy.into_vec().map_err(bad)?.into()),
        other => {
            return Err(format!(
                "'{}' has dtype '{other}'; expected float32, float64, int32, int64 or bool",
                path.display()
            ));
        }
    };
    Tensor::new(shape, buffer)
        .ok_or_else(|| format!("'{}' holds fewer elements than its shape says", path.display()))
}

/// Checks, before `npyz` computes with it, that the shape in the header
/// of the `.npy` file `reader` is at the start of has an element count that
/// fits in 64 bits (`npyz` multiplies the dimensions unchecked). Anything
/// else wrong with the header is left for `npyz` to report.
fn check_shape(reader: &mut impl Read) -> Result<(), String> {
    let mut prefix = [0u8; 12];
    let mut filled = 0;
    while filled < prefix.len() {
        match reader.read(&mut prefix[filled..]) {
            Ok(0) => return Ok(()),
            Ok(n) => filled += n,
            Err(e) => return Err(format!("cannot be read: {e}")),
        }
    }
    if &prefix[..6] != b"\x93NUMPY" {
        return Ok(());
    }
    let (length, start) = match prefix[6] {
        1 => (u16::from_le_bytes([prefix[8], prefix[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]) as usize,
            12,
        ),
    };
    let mut header = prefix[start..].to_vec();
    reader
        .take(length.saturating_sub(header.len()) as u64)
        .read_to_end(&mut header)
        .map_err(|e| format!("cannot be read: {e}"))?;
    let header = String::from_utf8_lossy(&header);
    let Some(tuple) = header
        .split_once("'shape'")
        .and_then(|(_, rest)| rest.split_once('('))
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(tuple, _)| tuple)
    else {
        return Ok(());
    };
    let mut count: u64 = 1;
    for dimension in tuple.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        // A dimension that is not a number is npyz's to report.
        let Ok(dimension) = dimension.parse::<u64>() else {
            return Ok(());
        };
        count = count
            .checked_mul(dimension)
            .ok_or_else(|| format!("has shape ({tuple}), whose element count does not fit in 64 bits"))?;
    }
    Ok(())
}

/// Writes a `.npy` file.
pub fn write(path: &Path, tensor: &Tensor) -> Result<(), String> {
    let failed = |e: io::Error| format!("cannot write '{}': {e}", path.display());
    let mut file = io::BufWriter::new(File::create(path).map_err(failed)?);
    write_to(&mut file, tensor)
        .and_then(|()| file.flush())
        .map_err(failed)
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
            write(&path, &tensor).unwrap();
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
        assert!(error.contains("does not fit in 64 bits"), "{error}");
        // Within 64 bits but past the element limit: the limit's message.
        std::fs::write(&path, header_only("(4294967296, 4)")).unwrap();
        let error = read(&path).unwrap_err();
        assert!(error.contains("elements"), "{error}");
    }
}
