// GPU ABI tests are added with the link providers.
