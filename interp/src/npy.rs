//! Reading and writing tensors as NumPy `.npy` files, through `npyz`.
//!
//! Supported dtypes: `<f4`, `<f8`, `<i4`, `<i8` and `|b1`, C order.

use crate::tensor::{Buffer, Tensor};
use npyz::{DType, NpyFile, WriterBuilder};
use std::{fs::File, io::BufReader, path::Path};

/// Reads a `.npy` file.
pub fn read(path: &Path) -> Result<Tensor, String> {
    let file = File::open(path).map_err(|e| format!("cannot open '{}': {e}", path.display()))?;
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

/// Writes a `.npy` file.
pub fn write(path: &Path, tensor: &Tensor) -> Result<(), String> {
    let failed = |e: std::io::Error| format!("cannot write '{}': {e}", path.display());
    let mut file = File::create(path).map_err(failed)?;
    let shape: Vec<u64> = tensor.shape().iter().map(|&d| d as u64).collect();
    macro_rules! write_all {
        ($values:expr) => {{
            let mut writer = npyz::WriteOptions::new()
                .default_dtype()
                .shape(&shape)
                .writer(&mut file)
                .begin_nd()
                .map_err(failed)?;
            writer.extend($values.iter().copied()).map_err(failed)?;
            writer.finish().map_err(failed)
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
}
