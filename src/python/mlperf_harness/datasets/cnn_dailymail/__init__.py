"""CNN-DailyMail for GPT-J: the summarisation samples in MLCommons' JSON layout, a generated stand-in
set of news-like articles, and GPT-J's byte-level BPE tokenizer."""
