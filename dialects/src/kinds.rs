//! Element types and op kinds, with the typing rule of every kind.
//!
//! The spelling of each kind is part of DESIGN.md's textual contract.

use melior::ir::Type;
use std::fmt;

/// The element types a `meta` tensor may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ElementType {
    /// 32-bit IEEE float.
    F32,
    /// 64-bit IEEE float.
    F64,
    /// 32-bit signless integer, read as signed.
    I32,
    /// 64-bit signless integer, read as signed.
    I64,
    /// Boolean.
    I1,
}

impl ElementType {
    /// Every element type, in the order diagnostics list them.
    pub const ALL: [ElementType; 5] = [Self::F32, Self::F64, Self::I32, Self::I64, Self::I1];

    /// Classifies an MLIR type; `None` for anything unsupported.
    pub fn from_type(r#type: Type) -> Option<Self> {
        // By the type's kind, not its printed form: the verifier asks for
        // every operand and result, and printing builds an AsmState each
        // time.
        use melior::ir::TypeLike;
        if r#type.is_f32() {
            return Some(Self::F32);
        }
        if r#type.is_f64() {
            return Some(Self::F64);
        }
        let integer = melior::ir::r#type::IntegerType::try_from(r#type).ok()?;
        if !integer.is_signless() {
            return None;
        }
        match integer.width() {
            32 => Some(Self::I32),
            64 => Some(Self::I64),
            1 => Some(Self::I1),
            _ => None,
        }
    }

    /// The MLIR type of one element (`i1` for `I1`): the inverse of
    /// [`Self::from_type`].
    pub fn mlir_type(self, context: &melior::Context) -> Type<'_> {
        use melior::ir::r#type::IntegerType;
        match self {
            Self::F32 => Type::float32(context),
            Self::F64 => Type::float64(context),
            Self::I32 => IntegerType::new(context, 32).into(),
            Self::I64 => IntegerType::new(context, 64).into(),
            Self::I1 => IntegerType::new(context, 1).into(),
        }
    }

    /// Parses the MLIR spelling (`f32`, `i1`, ...).
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The MLIR spelling.
    pub fn name(self) -> &'static str {
        match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::I1 => "i1",
        }
    }

    /// `f32` or `f64`.
    pub fn is_float(self) -> bool {
        matches!(self, Self::F32 | Self::F64)
    }

    /// Size of one element in bytes (an `i1` takes one byte).
    pub fn byte_width(self) -> usize {
        match self {
            Self::F32 | Self::I32 => 4,
            Self::F64 | Self::I64 => 8,
            Self::I1 => 1,
        }
    }
}

/// The bytes a tensor of static sizes `dims` with `width`-byte elements
/// spans, counting each size of 0 as 1, or `None` when that passes
/// `i64::MAX`. One rule for every size jitc computes with: the verifier's
/// bound on types, the element limit of tensors and `.npy` files, the
/// shapes speculation assumes. Counting zeros as ones matters because
/// strides, loop extents and offsets multiply the sizes around a zero
/// even when a tensor holds no element.
pub fn extent_bytes(dims: impl IntoIterator<Item = u64>, width: u64) -> Option<u64> {
    dims.into_iter()
        .try_fold(width, |bytes, d| bytes.checked_mul(d.max(1)))
        .filter(|&bytes| bytes <= i64::MAX as u64)
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Which element types a kind accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeClass {
    /// `f32`, `f64`.
    Float,
    /// `f32`, `f64`, `i32`, `i64`.
    Numeric,
    /// `f32`, `f64`, `i32`, `i64`: numbers with a sign to flip or drop.
    Signed,
    /// `i1`, `i32`, `i64`: booleans and bitwise integers.
    Logical,
    /// Every element type.
    Any,
}

impl TypeClass {
    /// Whether `element` belongs to the class.
    pub fn accepts(self, element: ElementType) -> bool {
        match self {
            Self::Float => element.is_float(),
            Self::Numeric | Self::Signed => element != ElementType::I1,
            Self::Logical => !element.is_float(),
            Self::Any => true,
        }
    }

    /// How diagnostics name the class.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Float => "f32 or f64",
            Self::Numeric | Self::Signed => "f32, f64, i32 or i64",
            Self::Logical => "i1, i32 or i64",
            Self::Any => "any element type",
        }
    }
}

/// What every kind enum offers, for code that handles them alike (parsing
/// a kind a user wrote and checking its operands, say).
pub trait Kind: Copy + Sized {
    /// Parses the contract spelling.
    fn parse(text: &str) -> Option<Self>;
    /// The contract spelling.
    fn name(self) -> &'static str;
    /// The element types the kind accepts as operands.
    fn operand_class(self) -> TypeClass;
    /// All spellings, comma separated, for diagnostics.
    fn spellings() -> String;
}

/// Declares a kind enum with its textual spelling and type class.
macro_rules! kinds {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal : $class:ident,)* }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
        pub enum $name {
            $($(#[$vdoc])* $variant,)*
        }

        impl $name {
            /// Every kind, in contract order.
            pub const ALL: &'static [$name] = &[$($name::$variant,)*];

            /// Parses the contract spelling.
            pub fn parse(text: &str) -> Option<Self> {
                match text {
                    $($text => Some(Self::$variant),)*
                    _ => None,
                }
            }

            /// The contract spelling.
            pub fn name(self) -> &'static str {
                match self {
                    $(Self::$variant => $text,)*
                }
            }

            /// The element types the kind accepts as operands.
            pub fn operand_class(self) -> TypeClass {
                match self {
                    $(Self::$variant => TypeClass::$class,)*
                }
            }

            /// All spellings, comma separated, for diagnostics.
            pub fn spellings() -> String {
                Self::ALL.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
            }
        }

        impl Kind for $name {
            fn parse(text: &str) -> Option<Self> {
                $name::parse(text)
            }
            fn name(self) -> &'static str {
                $name::name(self)
            }
            fn operand_class(self) -> TypeClass {
                $name::operand_class(self)
            }
            fn spellings() -> String {
                $name::spellings()
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

kinds! {
    /// Kinds of `meta.unary`.
    UnaryKind {
        /// `-x`.
        Neg = "neg": Signed,
        /// `|x|`.
        Abs = "abs": Signed,
        /// `e^x`.
        Exp = "exp": Float,
        /// Natural logarithm.
        Log = "log": Float,
        /// Square root.
        Sqrt = "sqrt": Float,
        /// `1 / sqrt(x)`.
        Rsqrt = "rsqrt": Float,
        /// Sine.
        Sin = "sin": Float,
        /// Cosine.
        Cos = "cos": Float,
        /// Hyperbolic tangent.
        Tanh = "tanh": Float,
        /// Gauss error function.
        Erf = "erf": Float,
        /// `1 / (1 + e^-x)`.
        Sigmoid = "sigmoid": Float,
        /// Round toward negative infinity.
        Floor = "floor": Float,
        /// Round toward positive infinity.
        Ceil = "ceil": Float,
        /// Round half away from zero.
        Round = "round": Float,
        /// Logical not on `i1`, bitwise not on integers.
        Not = "not": Logical,
        /// Element type conversion; the only kind whose result type differs.
        Cast = "cast": Any,
    }
}

kinds! {
    /// Kinds of `meta.binary`.
    BinaryKind {
        /// Sum.
        Add = "add": Numeric,
        /// Difference.
        Sub = "sub": Numeric,
        /// Product.
        Mul = "mul": Numeric,
        /// Quotient; integers truncate toward zero.
        Div = "div": Numeric,
        /// Remainder with the sign of the dividend.
        Mod = "mod": Numeric,
        /// Power.
        Pow = "pow": Float,
        /// Maximum; floats propagate NaN.
        Max = "max": Numeric,
        /// Minimum; floats propagate NaN.
        Min = "min": Numeric,
        /// `==`, giving `i1`.
        Eq = "eq": Any,
        /// `!=`, giving `i1`.
        Ne = "ne": Any,
        /// `<`, giving `i1`.
        Lt = "lt": Any,
        /// `<=`, giving `i1`.
        Le = "le": Any,
        /// `>`, giving `i1`.
        Gt = "gt": Any,
        /// `>=`, giving `i1`.
        Ge = "ge": Any,
        /// Logical or bitwise and.
        And = "and": Logical,
        /// Logical or bitwise or.
        Or = "or": Logical,
        /// Logical or bitwise exclusive or.
        Xor = "xor": Logical,
    }
}

impl BinaryKind {
    /// Whether the kind is a comparison, whose result is `i1`.
    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            Self::Eq | Self::Ne | Self::Lt | Self::Le | Self::Gt | Self::Ge
        )
    }

    /// The result's element type for operands of `element`: `i1` for a
    /// comparison, else the operands'.
    pub fn result_element(self, element: ElementType) -> ElementType {
        if self.is_comparison() {
            ElementType::I1
        } else {
            element
        }
    }
}

kinds! {
    /// Kinds of `meta.ternary`.
    TernaryKind {
        /// `condition ? on_true : on_false`.
        Select = "select": Any,
    }
}

kinds! {
    /// Reduction kinds of `meta.reindex_reduce`.
    ReduceKind {
        /// Sum; identity 0.
        Add = "add": Numeric,
        /// Product; identity 1.
        Mul = "mul": Numeric,
        /// Maximum; identity -inf or the integer minimum.
        Max = "max": Numeric,
        /// Minimum; identity +inf or the integer maximum.
        Min = "min": Numeric,
        /// Logical or bitwise and; identity true (all ones).
        And = "and": Logical,
        /// Logical or bitwise or; identity false (zero).
        Or = "or": Logical,
    }
}

impl ReduceKind {
    /// The element-wise op one reduction step applies: `acc step x`.
    pub fn step(self) -> BinaryKind {
        match self {
            Self::Add => BinaryKind::Add,
            Self::Mul => BinaryKind::Mul,
            Self::Max => BinaryKind::Max,
            Self::Min => BinaryKind::Min,
            Self::And => BinaryKind::And,
            Self::Or => BinaryKind::Or,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_round_trip() {
        for kind in UnaryKind::ALL {
            assert_eq!(UnaryKind::parse(kind.name()), Some(*kind));
        }
        for kind in BinaryKind::ALL {
            assert_eq!(BinaryKind::parse(kind.name()), Some(*kind));
        }
        for kind in ReduceKind::ALL {
            assert_eq!(ReduceKind::parse(kind.name()), Some(*kind));
        }
        assert_eq!(UnaryKind::parse("frobnicate"), None);
    }

    #[test]
    fn contract_spellings_are_complete() {
        // DESIGN.md's lists, verbatim.
        let unary = "neg abs exp log sqrt rsqrt sin cos tanh erf sigmoid floor ceil round not cast";
        let binary = "add sub mul div mod pow max min eq ne lt le gt ge and or xor";
        assert_eq!(UnaryKind::ALL.len(), unary.split(' ').count());
        assert!(unary.split(' ').all(|k| UnaryKind::parse(k).is_some()));
        assert_eq!(BinaryKind::ALL.len(), binary.split(' ').count());
        assert!(binary.split(' ').all(|k| BinaryKind::parse(k).is_some()));
    }

    #[test]
    fn type_classes() {
        assert!(!UnaryKind::Sqrt.operand_class().accepts(ElementType::I32));
        assert!(!BinaryKind::And.operand_class().accepts(ElementType::F32));
        assert!(BinaryKind::And.operand_class().accepts(ElementType::I1));
        assert!(!ReduceKind::Add.operand_class().accepts(ElementType::I1));
        assert!(UnaryKind::Cast.operand_class().accepts(ElementType::I1));
    }
}
