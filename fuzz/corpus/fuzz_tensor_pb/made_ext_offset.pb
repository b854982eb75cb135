B
ext_offsetj
locationdata.binj
offset64j
length32p