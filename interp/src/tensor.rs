//! Tensors: a shape and a row-major buffer of one element type, with the
//! literal syntax `2x3xf32=[1 2 3][4 5 6]` used by `jitc run` for printing
//! and for inline inputs (as `iree-run-module` does).

use crate::{scalar::Scalar, storage::Storage};
use jitc_dialect::kinds::ElementType;
use std::fmt;

/// The elements of a tensor, row-major, in aligned pooled storage.
#[derive(Debug, Clone, PartialEq)]
pub enum Buffer {
    /// `f32` elements.
    F32(Storage<f32>),
    /// `f64` elements.
    F64(Storage<f64>),
    /// `i32` elements.
    I32(Storage<i32>),
    /// `i64` elements.
    I64(Storage<i64>),
    /// `i1` elements.
    I1(Storage<bool>),
}

impl Buffer {
    /// `len` copies of `value`.
    pub fn filled(value: Scalar, len: usize) -> Self {
        match value {
            Scalar::F32(v) => Self::F32(Storage::filled(v, len)),
            Scalar::F64(v) => Self::F64(Storage::filled(v, len)),
            Scalar::I32(v) => Self::I32(Storage::filled(v, len)),
            Scalar::I64(v) => Self::I64(Storage::filled(v, len)),
            Scalar::I1(v) => Self::I1(Storage::filled(v, len)),
        }
    }

    /// [`Self::filled`], or why the memory could not be had (an error,
    /// never an abort, for sizes a user chose).
    pub fn try_filled(value: Scalar, len: usize) -> Result<Self, String> {
        Ok(match value {
            Scalar::F32(v) => Self::F32(Storage::try_filled(v, len)?),
            Scalar::F64(v) => Self::F64(Storage::try_filled(v, len)?),
            Scalar::I32(v) => Self::I32(Storage::try_filled(v, len)?),
            Scalar::I64(v) => Self::I64(Storage::try_filled(v, len)?),
            Scalar::I1(v) => Self::I1(Storage::try_filled(v, len)?),
        })
    }

    /// `len` elements of `element` with valid but unspecified values, to be
    /// overwritten (see [`Storage::for_overwrite`]), or why the memory
    /// could not be had.
    pub fn try_for_overwrite(element: ElementType, len: usize) -> Result<Self, String> {
        Ok(match element {
            ElementType::F32 => Self::F32(Storage::try_for_overwrite(len)?),
            ElementType::F64 => Self::F64(Storage::try_for_overwrite(len)?),
            ElementType::I32 => Self::I32(Storage::try_for_overwrite(len)?),
            ElementType::I64 => Self::I64(Storage::try_for_overwrite(len)?),
            ElementType::I1 => Self::I1(Storage::try_for_overwrite(len)?),
        })
    }

    /// A copy of `bytes`, whole elements of `element` in native byte order,
    /// or why the memory could not be had. A boolean is any byte, as C and
    /// NumPy read one (a NumPy view of other bytes as bool): every byte but
    /// 0 is stored as 1, so the buffer holds only valid `bool`s.
    pub fn try_from_bytes(element: ElementType, bytes: &[u8]) -> Result<Self, String> {
        let width = element.byte_width();
        if !bytes.len().is_multiple_of(width) {
            return Err(format!(
                "{} bytes are not whole elements of {} bytes",
                bytes.len(),
                width
            ));
        }
        let mut buffer = Self::try_for_overwrite(element, bytes.len() / width)?;
        if let Self::I1(flags) = &mut buffer {
            for (flag, &byte) in flags.iter_mut().zip(bytes) {
                *flag = byte != 0;
            }
        } else {
            // SAFETY: the buffer holds `bytes.len()` bytes of elements
            // whose every bit pattern is valid, and does not overlap
            // `bytes`.
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), buffer.as_mut_ptr(), bytes.len()) };
        }
        Ok(buffer)
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match self {
            Self::F32(v) => v.len(),
            Self::F64(v) => v.len(),
            Self::I32(v) => v.len(),
            Self::I64(v) => v.len(),
            Self::I1(v) => v.len(),
        }
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        match self {
            Self::F32(_) => ElementType::F32,
            Self::F64(_) => ElementType::F64,
            Self::I32(_) => ElementType::I32,
            Self::I64(_) => ElementType::I64,
            Self::I1(_) => ElementType::I1,
        }
    }

    /// The elements' bytes (`i1` elements are one byte, 0 or 1): equal
    /// bytes are equal values bit for bit, `-0.0` and `+0.0` apart.
    pub fn as_bytes(&self) -> &[u8] {
        let len = self.len() * self.element_type().byte_width();
        // SAFETY: the buffer holds `len` initialized bytes (`len()`
        // elements of the element type's width), borrowed with `self`.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), len) }
    }

    /// The address of the first element, for native code that reads the
    /// buffer (`i1` elements are one byte, 0 or 1).
    pub fn as_ptr(&self) -> *const u8 {
        match self {
            Self::F32(v) => v.as_ptr().cast(),
            Self::F64(v) => v.as_ptr().cast(),
            Self::I32(v) => v.as_ptr().cast(),
            Self::I64(v) => v.as_ptr().cast(),
            Self::I1(v) => v.as_ptr().cast(),
        }
    }

    /// The address of the first element, for native code that writes it.
    /// Storing anything but 0 or 1 into an `i1` buffer is undefined.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            Self::F32(v) => v.as_mut_ptr().cast(),
            Self::F64(v) => v.as_mut_ptr().cast(),
            Self::I32(v) => v.as_mut_ptr().cast(),
            Self::I64(v) => v.as_mut_ptr().cast(),
            Self::I1(v) => v.as_mut_ptr().cast(),
        }
    }

    /// Element `index`; panics when out of range, like slice indexing.
    pub fn get(&self, index: usize) -> Scalar {
        match self {
            Self::F32(v) => Scalar::F32(v[index]),
            Self::F64(v) => Scalar::F64(v[index]),
            Self::I32(v) => Scalar::I32(v[index]),
            Self::I64(v) => Scalar::I64(v[index]),
            Self::I1(v) => Scalar::I1(v[index]),
        }
    }

    /// Sets element `index` to `value`, converted to the buffer's type.
    pub fn set(&mut self, index: usize, value: Scalar) {
        match self {
            Self::F32(v) => v[index] = value.cast(ElementType::F32).as_f64() as f32,
            Self::F64(v) => v[index] = value.cast(ElementType::F64).as_f64(),
            Self::I32(v) => v[index] = value.cast(ElementType::I32).as_i64() as i32,
            Self::I64(v) => v[index] = value.cast(ElementType::I64).as_i64(),
            Self::I1(v) => v[index] = value.is_nonzero(),
        }
    }
}

/// A dense tensor.
#[derive(Debug, Clone, PartialEq)]
pub struct Tensor {
    shape: Vec<usize>,
    buffer: Buffer,
}

impl Tensor {
    /// A tensor of `shape` holding `buffer`; `None` when the sizes disagree.
    pub fn new(shape: Vec<usize>, buffer: Buffer) -> Option<Self> {
        (shape.iter().product::<usize>() == buffer.len()).then_some(Self { shape, buffer })
    }

    /// A tensor of `shape` with every element `value`.
    pub fn splat(shape: Vec<usize>, value: Scalar) -> Self {
        let len = shape.iter().product();
        Self {
            shape,
            buffer: Buffer::filled(value, len),
        }
    }

    /// A tensor of `shape` whose elements are valid but unspecified, to be
    /// overwritten (by a compiled kernel), or why it cannot be had: more
    /// elements than [`max_elements`], or memory the allocator refused.
    pub fn for_overwrite(shape: Vec<usize>, element: ElementType) -> Result<Self, String> {
        let len = checked_len(&shape)?;
        Ok(Self {
            shape,
            buffer: Buffer::try_for_overwrite(element, len)?,
        })
    }

    /// A rank-0 tensor.
    pub fn scalar(value: Scalar) -> Self {
        Self::splat(Vec::new(), value)
    }

    /// The shape.
    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    /// The element type.
    pub fn element_type(&self) -> ElementType {
        self.buffer.element_type()
    }

    /// The elements.
    pub fn buffer(&self) -> &Buffer {
        &self.buffer
    }

    /// The elements, mutably.
    pub fn buffer_mut(&mut self) -> &mut Buffer {
        &mut self.buffer
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.buffer.len()
    }

    /// Whether there are no elements.
    pub fn is_empty(&self) -> bool {
        self.buffer.is_empty()
    }

    /// Element at flat (row-major) position `index`.
    pub fn get(&self, index: usize) -> Scalar {
        self.buffer.get(index)
    }

    /// The same elements under another shape of equal size.
    pub fn reshaped(self, shape: Vec<usize>) -> Option<Self> {
        Self::new(shape, self.buffer)
    }

    /// The type, as MLIR spells it: `tensor<2x3xf32>`.
    pub fn type_name(&self) -> String {
        format!("tensor<{}>", shape_prefix(&self.shape, self.element_type()))
    }

    /// Parses a literal: `2x3xf32=1 2 3 4 5 6`, with optional brackets and
    /// commas (`2x3xf32=[1 2 3][4 5 6]`), or `f32=2.5` for a rank-0 tensor.
    /// `i1` elements are `true`, `false`, `1` or `0`.
    pub fn parse_literal(text: &str) -> Result<Self, String> {
        let (ty, values) = text
            .split_once('=')
            .ok_or_else(|| format!("expected `SHAPExTYPE=VALUES` (e.g. `2x2xf32=1 2 3 4`), got `{text}`"))?;
        // Leading `Nx` dimensions, then the element type (which may itself
        // contain an `x`, as `index` does).
        let mut rest = ty.trim();
        let mut shape = Vec::new();
        while let Some((dimension, after)) = rest.split_once('x') {
            if dimension.is_empty() || !dimension.bytes().all(|b| b.is_ascii_digit()) {
                break;
            }
            shape.push(
                dimension
                    .parse::<usize>()
                    .map_err(|_| format!("bad dimension `{dimension}` in `{ty}`"))?,
            );
            rest = after;
        }
        let element_name = rest;
        // `2xbxf32`: a dimension that is not a number, before a good type.
        if ElementType::parse(element_name).is_none()
            && let Some((dimensions, last)) = element_name.rsplit_once('x')
            && ElementType::parse(last).is_some()
            && let Some(bad) = dimensions.split('x').find(|d| d.parse::<usize>().is_err())
        {
            return Err(format!("bad dimension `{bad}` in `{ty}`"));
        }
        let element = ElementType::parse(element_name).ok_or_else(|| match element_name {
            "index" => "a tensor cannot hold `index` elements (f32, f64, i32, i64 or i1); an `index` \
                        argument takes `index=N`"
                .to_owned(),
            "" => format!("`{ty}` names no element type; expected f32, f64, i32, i64 or i1"),
            _ => format!("unknown element type `{element_name}`; expected f32, f64, i32, i64 or i1"),
        })?;
        let mut depth = 0i64;
        for c in values.chars() {
            match c {
                '[' => depth += 1,
                ']' if depth == 0 => return Err(format!("`{values}` closes a bracket it never opened")),
                ']' => depth -= 1,
                _ => {}
            }
        }
        if depth != 0 {
            return Err(format!("`{values}` leaves {depth} bracket(s) open"));
        }
        let tokens: Vec<&str> = values
            .split(|c: char| c.is_whitespace() || "[],".contains(c))
            .filter(|t| !t.is_empty())
            .collect();
        let len = checked_len(&shape)?;
        if tokens.len() != len && !(tokens.len() == 1 && len > 0) {
            return Err(format!(
                "`{ty}` has {len} elements but {} values were given",
                tokens.len()
            ));
        }
        let buffer = if tokens.len() == 1 {
            Buffer::try_filled(Scalar::parse(tokens[0], element)?, len)?
        } else {
            let mut buffer = Buffer::try_filled(Scalar::zero(element), len)?;
            for (i, token) in tokens.iter().enumerate() {
                buffer.set(i, Scalar::parse(token, element)?);
            }
            buffer
        };
        Ok(Self { shape, buffer })
    }
}

/// The most elements one tensor may hold by default (2^28, 1 GiB of f32):
/// beyond that, a run stops with an error instead of exhausting memory.
pub const MAX_ELEMENTS: usize = 1 << 28;

/// The most elements one tensor may hold: `JITC_MAX_ELEMENTS`, else
/// [`MAX_ELEMENTS`]. One limit for every place that makes a tensor: the
/// interpreter, the CPU and CUDA backends, literals and `.npy` files.
/// A malformed value falls back to the default here; tools report it
/// first with [`configured_max_elements`].
pub fn max_elements() -> usize {
    static LIMIT: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *LIMIT.get_or_init(|| configured_max_elements().unwrap_or(MAX_ELEMENTS))
}

/// The limit `JITC_MAX_ELEMENTS` sets ([`MAX_ELEMENTS`] when unset), or
/// why its value is not one.
pub fn configured_max_elements() -> Result<usize, String> {
    match std::env::var("JITC_MAX_ELEMENTS") {
        Err(_) => Ok(MAX_ELEMENTS),
        Ok(text) => text
            .trim()
            .parse()
            .map_err(|_| format!("JITC_MAX_ELEMENTS must be a whole number of elements, got '{text}'")),
    }
}

/// The element count of `shape`, or why it cannot be held: more elements
/// than [`max_elements`], or sizes that multiply past what a 64-bit index
/// addresses even when one of them is 0
/// ([`jitc_dialect::kinds::extent_bytes`], which strides rely on).
pub fn checked_len(shape: &[usize]) -> Result<usize, String> {
    let limit = max_elements();
    if jitc_dialect::kinds::extent_bytes(shape.iter().map(|&d| d as u64), 8).is_none() {
        return Err(format!(
            "a tensor of shape {shape:?} is larger than a 64-bit index can address"
        ));
    }
    shape
        .iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= limit)
        .ok_or_else(|| {
            format!(
                "a tensor of shape {shape:?} has more than {limit} elements, jitc's limit (JITC_MAX_ELEMENTS)"
            )
        })
}

/// `2x3xf32`, or `f32` for rank 0.
pub fn shape_prefix(shape: &[usize], element: ElementType) -> String {
    let mut text: String = shape.iter().map(|d| format!("{d}x")).collect();
    text.push_str(element.name());
    text
}

/// Row-major strides of `shape`.
pub fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

impl fmt::Display for Tensor {
    /// `2x3xf32=[1 2 3][4 5 6]`; `f32=2.5` for rank 0.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}=", shape_prefix(&self.shape, self.element_type()))?;
        if self.shape.is_empty() {
            return write!(f, "{}", self.get(0));
        }
        // Like iree-run-module: one bracket level per dimension but the
        // outermost, `2x3xf32=[1 2 3][4 5 6]`, `3xf32=1 2 3`.
        let spans: Vec<usize> = strides(&self.shape)
            .iter()
            .zip(&self.shape)
            .skip(1)
            .map(|(s, n)| s * n)
            .collect();
        for i in 0..self.len() {
            let opening = spans.iter().filter(|&&span| i % span == 0).count();
            if i > 0 && opening == 0 {
                f.write_str(" ")?;
            }
            for _ in 0..opening {
                f.write_str("[")?;
            }
            write!(f, "{}", self.get(i))?;
            for _ in spans.iter().filter(|&&span| (i + 1) % span == 0) {
                f.write_str("]")?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_are_copied_and_booleans_read_as_c_reads_them() {
        let b = Buffer::try_from_bytes(ElementType::I1, &[0, 1, 2, 255]).unwrap();
        assert_eq!(b.as_bytes(), &[0, 1, 1, 1]);
        let f = Buffer::try_from_bytes(ElementType::F32, &1.5f32.to_ne_bytes()).unwrap();
        assert_eq!(f.get(0), Scalar::F32(1.5));
        assert_eq!(
            Buffer::try_from_bytes(ElementType::I32, &[0; 6]).unwrap_err(),
            "6 bytes are not whole elements of 4 bytes"
        );
    }

    #[test]
    fn literal_round_trip() {
        let t = Tensor::parse_literal("2x3xf32=1 2 3 4 5 6").unwrap();
        assert_eq!(t.to_string(), "2x3xf32=[1 2 3][4 5 6]");
        assert_eq!(Tensor::parse_literal(&t.to_string()).unwrap(), t);
        let s = Tensor::parse_literal("f64=2.5").unwrap();
        assert_eq!(s.to_string(), "f64=2.5");
        let b = Tensor::parse_literal("2x2xi1=true 0, 1 false").unwrap();
        assert_eq!(b.to_string(), "2x2xi1=[true false][true false]");
        let splat = Tensor::parse_literal("3xi32=7").unwrap();
        assert_eq!(splat.to_string(), "3xi32=7 7 7");
        let nested = Tensor::parse_literal("2x1x2xi64=1 2 3 4").unwrap();
        assert_eq!(nested.to_string(), "2x1x2xi64=[[1 2]][[3 4]]");
        // Floats far from 1 with an exponent, as Python prints them, and
        // still the shortest text that reads back.
        let far = "8xf32=1e30 -1.5e-7 3.4028235e38 1e-45 0.0001 9.999e-5 1e16 123456790000000";
        let t = Tensor::parse_literal(far).unwrap();
        assert_eq!(t.to_string(), far);
        assert_eq!(Tensor::parse_literal(&t.to_string()).unwrap(), t);
        let wide = Tensor::parse_literal("4xf64=1e300 -2.5e-308 5e-324 0.1").unwrap();
        assert_eq!(wide.to_string(), "4xf64=1e300 -2.5e-308 5e-324 0.1");
        let special = Tensor::parse_literal("4xf32=-0 nan -inf 0").unwrap();
        assert_eq!(special.to_string(), "4xf32=-0 NaN -inf 0");
    }

    #[test]
    fn literal_errors_say_what_is_wrong() {
        assert!(
            Tensor::parse_literal("2x2xf32=1 2 3")
                .unwrap_err()
                .contains("4 elements but 3 values")
        );
        assert!(
            Tensor::parse_literal("2x2xf16=1")
                .unwrap_err()
                .contains("unknown element type `f16`")
        );
        assert!(
            Tensor::parse_literal("2xbxf32=1")
                .unwrap_err()
                .contains("bad dimension `b`")
        );
        assert!(
            Tensor::parse_literal("2xf32")
                .unwrap_err()
                .contains("expected `SHAPExTYPE=VALUES`")
        );
        assert!(
            Tensor::parse_literal("2xi32=1 x")
                .unwrap_err()
                .contains("`x` is not an i32")
        );
    }

    #[test]
    fn strides_are_row_major() {
        assert_eq!(strides(&[2, 3, 4]), vec![12, 4, 1]);
        assert_eq!(strides(&[]), Vec::<usize>::new());
    }
}
