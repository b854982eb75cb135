€B	ext_wholej
locationdata.binp