//! Run store, JSONL records, reports, replay for mosaic.
