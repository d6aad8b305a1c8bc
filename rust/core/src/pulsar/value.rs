//! Plain values (numbers, text, lists, records) for decoded metadata, so that the
//! bindings can hand them to Python as dicts and lists without knowing the fields.

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    None,
    Bool(bool),
    Int(i64),
    Text(String),
    Bytes(Vec<u8>),
    List(Vec<Value>),
    /// A fixed group, such as a (ledger, entry) position.
    Tuple(Vec<Value>),
    /// Named fields in order (a record, or a string-keyed map).
    Map(Vec<(String, Value)>),
}

impl Value {
    pub fn opt_int(v: Option<i64>) -> Value {
        v.map_or(Value::None, Value::Int)
    }

    pub fn opt_bool(v: Option<bool>) -> Value {
        v.map_or(Value::None, Value::Bool)
    }

    pub fn record<const N: usize>(fields: [(&str, Value); N]) -> Value {
        Value::Map(fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
    }
}
