//! Columnar tables: the Arrow form of schedlab's results.
//!
//! The people who read a scheduler experiment's numbers do it in pandas, polars or
//! LISA, all of which speak Apache Arrow: typed columns with a validity bitmap,
//! one contiguous buffer per column. A [`Frame`] is such a table built column by
//! column from the run's own counters (never through per-row objects), and leaves
//! this crate in one of two encodings: the Arrow IPC stream, which pyarrow and
//! polars map straight into a DataFrame (the Python package's path), and Parquet
//! (`--parquet` of `sweep` and `compare`), the file format those tools keep data
//! in. Column names follow the rest of schedlab (and the kernel's tracepoint field
//! names for trace events); integers are signed 64-bit, which pandas, polars and
//! Parquet all hold without loss for every count and nanosecond a run can reach
//! (the engine's time limit is far below 2^63 ns).
//!
//! The encoders are deterministic: the same frame gives the same bytes.

use arrow_array::builder::{Float64Builder, Int64Builder, StringBuilder};
use arrow_array::ArrayRef;
pub use arrow_array::RecordBatch;
use arrow_schema::{DataType, Field, Schema};
use std::sync::Arc;

/// A table under construction: named, typed columns of equal length.
#[derive(Default)]
pub struct Frame {
    fields: Vec<Field>,
    cols: Vec<ArrayRef>,
}

/// A column being filled row by row, with nulls where a row has no value.
pub enum Column {
    Int(Int64Builder),
    Float(Float64Builder),
    Str(StringBuilder),
}

impl Column {
    pub fn int() -> Column {
        Column::Int(Int64Builder::new())
    }
    pub fn float() -> Column {
        Column::Float(Float64Builder::new())
    }
    pub fn str() -> Column {
        Column::Str(StringBuilder::new())
    }
    /// Append a null.
    pub fn null(&mut self) {
        match self {
            Column::Int(b) => b.append_null(),
            Column::Float(b) => b.append_null(),
            Column::Str(b) => b.append_null(),
        }
    }
    fn finish(self) -> (DataType, ArrayRef) {
        match self {
            Column::Int(mut b) => (DataType::Int64, Arc::new(b.finish())),
            Column::Float(mut b) => (DataType::Float64, Arc::new(b.finish())),
            Column::Str(mut b) => (DataType::Utf8, Arc::new(b.finish())),
        }
    }
}

/// Saturating conversion of a count or time to the table's signed integers.
pub fn i64_of(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

impl Frame {
    pub fn new() -> Frame {
        Frame::default()
    }

    /// Add a finished column.
    pub fn column(mut self, name: &str, col: Column) -> Frame {
        let (ty, arr) = col.finish();
        self.fields.push(Field::new(name, ty, true));
        self.cols.push(arr);
        self
    }

    /// Add an integer column.
    pub fn ints(self, name: &str, v: impl IntoIterator<Item = i64>) -> Frame {
        let mut b = Int64Builder::new();
        b.extend(v.into_iter().map(Some));
        self.column(name, Column::Int(b))
    }

    /// Add an integer column of unsigned counts.
    pub fn uints(self, name: &str, v: impl IntoIterator<Item = u64>) -> Frame {
        self.ints(name, v.into_iter().map(i64_of))
    }

    /// Add an integer column with nulls.
    pub fn opt_uints(self, name: &str, v: impl IntoIterator<Item = Option<u64>>) -> Frame {
        let mut b = Int64Builder::new();
        b.extend(v.into_iter().map(|x| x.map(i64_of)));
        self.column(name, Column::Int(b))
    }

    /// Add a float column (nulls where `None`).
    pub fn floats(self, name: &str, v: impl IntoIterator<Item = Option<f64>>) -> Frame {
        let mut b = Float64Builder::new();
        b.extend(v);
        self.column(name, Column::Float(b))
    }

    /// Add a string column.
    pub fn strs<S: AsRef<str>>(self, name: &str, v: impl IntoIterator<Item = S>) -> Frame {
        let mut b = StringBuilder::new();
        for s in v {
            b.append_value(s.as_ref());
        }
        self.column(name, Column::Str(b))
    }

    /// The finished table.
    pub fn batch(self) -> RecordBatch {
        let schema = Arc::new(Schema::new(self.fields));
        if self.cols.is_empty() {
            return RecordBatch::new_empty(schema);
        }
        RecordBatch::try_new(schema, self.cols).expect("frame columns have equal lengths")
    }
}

/// `batch` as an Arrow IPC stream (schema, one record batch, end marker).
pub fn ipc(batch: &RecordBatch) -> Vec<u8> {
    let mut w = arrow_ipc::writer::StreamWriter::try_new(Vec::new(), &batch.schema())
        .expect("IPC writer on a Vec");
    w.write(batch).expect("IPC write to a Vec");
    w.finish().expect("IPC finish on a Vec");
    w.into_inner().expect("IPC writer into Vec")
}

/// `batch` as a Parquet file (Snappy-compressed pages).
pub fn parquet(batch: &RecordBatch) -> Vec<u8> {
    use parquet::basic::Compression;
    use parquet::file::properties::WriterProperties;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut w = parquet::arrow::ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props))
        .expect("Parquet writer on a Vec");
    w.write(batch).expect("Parquet write to a Vec");
    w.into_inner().expect("Parquet writer into Vec")
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Float64Array, Int64Array, StringArray};

    fn sample() -> RecordBatch {
        let mut c = Column::str();
        if let Column::Str(b) = &mut c {
            b.append_value("x");
        }
        c.null();
        Frame::new()
            .uints("n", [1, u64::MAX])
            .floats("f", [Some(0.5), None])
            .strs("s", ["a", "b"])
            .column("opt", c)
            .batch()
    }

    #[test]
    fn columns_keep_types_nulls_and_saturate() {
        let b = sample();
        assert_eq!(b.num_rows(), 2);
        let n = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((n.value(0), n.value(1)), (1, i64::MAX));
        let f = b.column(1).as_any().downcast_ref::<Float64Array>().unwrap();
        assert!(f.is_null(1) && f.value(0) == 0.5);
        let s = b.column(3).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(s.value(0), "x");
        assert!(s.is_null(1));
    }

    #[test]
    fn ipc_round_trips_and_is_deterministic() {
        let b = sample();
        let bytes = ipc(&b);
        assert_eq!(bytes, ipc(&sample()));
        let mut r =
            arrow_ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).unwrap();
        let back = r.next().unwrap().unwrap();
        assert_eq!(back, b);
        assert!(r.next().is_none());
    }

    #[test]
    fn parquet_round_trips() {
        let b = sample();
        let bytes = parquet(&b);
        assert_eq!(&bytes[..4], b"PAR1");
        assert_eq!(bytes, parquet(&sample()));
        let r = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(
            bytes::Bytes::from(bytes),
        )
        .unwrap()
        .build()
        .unwrap();
        let batches: Vec<RecordBatch> = r.map(Result::unwrap).collect();
        assert_eq!(batches, vec![b]);
    }

    #[test]
    fn an_empty_frame_is_an_empty_table() {
        assert_eq!(Frame::new().batch().num_rows(), 0);
        assert!(!ipc(&Frame::new().batch()).is_empty());
    }
}
