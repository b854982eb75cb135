Bext_missingj
locationnope.binp