Bext_unalignedj
locationdata.binj
offset3j
length12p