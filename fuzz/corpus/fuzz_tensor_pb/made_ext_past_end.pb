Bext_past_endj
locationdata.binj
offset4090p