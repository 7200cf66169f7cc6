//! Token counting for the economy section: `o200k_base`, the encoding of current OpenAI
//! models, through GitHub's `bpe-openai` (several times faster than tiktoken on long texts,
//! and its tables are built into the binary, so no download at run time).

/// Number of `o200k_base` tokens in `text`.
pub fn count(text: &str) -> u64 {
    bpe_openai::o200k_base().count(text) as u64
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_like_tiktoken() {
        // Reference counts from tiktoken's o200k_base.
        assert_eq!(super::count(""), 0);
        assert_eq!(super::count("hello world"), 2);
        assert_eq!(super::count("{\"name\":\"echo\"}"), 5);
    }
}
