"""KiTS19 for 3D-UNet: the raw layout, MLCommons' preprocessing and its store.

The public API (what benchmarks and the scorer call):

    layout.check_layout(data_dir) -> KitsLayout       the 43 inference cases present, or one line
    layout.read_case(case_dir) -> RawCase             a raw case as the reference reads it
    layout.write_raw_case(case_dir, image, label, affine)   a generated case in the raw layout
    transform.preprocess_case(image, label, spacing) -> (image, label)   the reference's steps
    preprocess.preprocess_dataset(data_dir, out_dir) -> KitsPreprocessReport   resumable
    store.load_preprocessed(out_dir) -> KitsPreprocessed   .cases, .shape(i), .load_case(i),
                                                           .load_image(i), .load_label(i)
"""
