//! The one integration-test binary: every test runs the real `catalock` binary or library on
//! real captures from `tests/fixtures/captures/` (third-party servers, captured unedited).

mod support;

mod action;
mod bad_input;
mod captures;
mod changes;
mod commands;
mod config;
mod everyday;
mod formats;
mod generated;
mod live_faults;
mod live_http;
mod live_stdio;
mod properties;
mod review;
mod snapshots;
mod vectors;
